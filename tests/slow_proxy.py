"""A reverse proxy in front of a real API that answers chosen requests late, as a server under load does: the request
reaches the API at once (what it creates is created and committed), and only its answer is held back."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

# Hop-by-hop headers and those that describe the body as the API sent it (httpx hands it over decoded).
_NOT_FORWARDED = {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class SlowProxy:
    """Proxies every request to `upstream`; the n-th `method path` request's answer waits `delays[n]` seconds
    (none after the list). `held` lists those requests' headers (names lower-cased), in order."""

    def __init__(self, upstream: str, method: str, path: str, delays: list[float]) -> None:
        self.upstream = upstream
        self.method, self.path = method, path
        self.delays = list(delays)
        self.held: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="slow-proxy", daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _delay_for(self, method: str, path: str, headers: dict[str, str]) -> float:
        if (method, path.split("?", 1)[0]) != (self.method, self.path):
            return 0.0
        with self._lock:
            self.held.append(headers)
            return self.delays[len(self.held) - 1] if len(self.held) <= len(self.delays) else 0.0

    def close(self) -> None:
        self._closing.set()  # answers still held are let go
        self._server.shutdown()
        self._server.server_close()


def _handler(proxy: SlowProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED}
            # A connection of its own per request: the held answers' threads share nothing.
            answer = httpx.request(self.command, proxy.upstream + self.path, content=body, headers=headers,
                                   timeout=120)
            delay = proxy._delay_for(self.command, self.path, {k.lower(): v for k, v in headers.items()})
            if delay:
                proxy._closing.wait(delay)  # the behaviour under test: an answer that comes late
            try:
                self.send_response(answer.status_code)
                for name, value in answer.headers.multi_items():
                    if name.lower() not in _NOT_FORWARDED:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped waiting: that is the point

        do_GET = do_POST = do_PATCH = do_DELETE = forward

        def log_message(self, *args: object) -> None:
            pass

    return Handler
