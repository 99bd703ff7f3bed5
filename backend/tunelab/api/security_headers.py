"""What the browser may do with the app's answers: a Content Security Policy, no framing by any site, no Referer
sent on, and no guessing of content types. The UI and share pages carry a share token in their URL (`/s/<token>`),
so no other site may frame them, and no link followed from them may send their address on.

The SPA works under the strict policy: Vite's build loads one module script and one stylesheet from this origin and
puts nothing inline; React's `style` props and uPlot set styles through the CSSOM, which `style-src 'self'` allows;
a chart's PNG export is a canvas turned into a blob: URL. FastAPI's API docs pages load their script and stylesheet
from a CDN and start them with an inline script, so they get a policy that allows those (they show only the public
OpenAPI document)."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

APP_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; "
           "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
            "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
            "font-src 'self' https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
            "worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")

_COMMON = [(b"x-frame-options", b"DENY"), (b"referrer-policy", b"no-referrer"), (b"x-content-type-options", b"nosniff")]
APP_HEADERS = [(b"content-security-policy", APP_CSP.encode()), *_COMMON]
DOCS_HEADERS = [(b"content-security-policy", DOCS_CSP.encode()), *_COMMON]


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP answer; `docs_paths` get DOCS_CSP."""

    def __init__(self, app: ASGIApp, docs_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.docs_paths = docs_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, send_with_security_headers(
            send, DOCS_HEADERS if scope["path"] in self.docs_paths else APP_HEADERS))


def send_with_security_headers(send: Send, added: list[tuple[bytes, bytes]] = APP_HEADERS) -> Send:
    """`send` adding `added` to the response's headers."""
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *added]
        await send(message)

    return send_with_headers
