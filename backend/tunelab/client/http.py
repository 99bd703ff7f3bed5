"""A small synchronous HTTP client for the Tunelab API, shared by the SDK and the CLI.

Paths are relative to the API prefix (`/runs/1` means `{url}/api/v1/runs/1`); a path that already starts
with `/api/` is sent as is. Every failure is a `TunelabError`: the server's one error shape
`{"error": {"code", "message", "details"}}` keeps its code, anything else gets a code of its own
(`SERVER_UNREACHABLE` when no connection could be made, `SERVER_TIMEOUT` when the server took the request but did
not answer within the read timeout, `HTTP_<status>` for a body that is not the error shape).

A launch (`ApiClient.launch`) carries an Idempotency-Key and is sent again with the same key when no answer came
back, so that a launch answered late is not made twice.
"""

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from tunelab import __version__
from tunelab.client.config import ClientConfig

API_PREFIX = "/api/v1"
# The events stream sends a keep-alive every 15 s; a minute of silence means the connection is dead.
SSE_READ_TIMEOUT_S = 60.0
IDEMPOTENCY_HEADER = "Idempotency-Key"
LAUNCH_ATTEMPTS = 3  # a launch sent, then sent again twice with the same key when no answer came back
LAUNCH_BACKOFF_S = 1.0  # before the first resend; doubled before the next


class TunelabError(Exception):
    """An API call that failed, with the server's error code (or one of ours when the server gave none)."""

    def __init__(self, code: str, message: str, details: Any = None, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details
        self.status = status

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"  # the message as it is now (a launch's adds the Idempotency-Key)


class NoAnswer(TunelabError):
    """No HTTP answer came back: worth trying again later (a launch with the same Idempotency-Key), unlike a 4xx."""


class ServerUnreachable(NoAnswer):
    """No connection: refused, reset, or not opened within the connect timeout."""

    def __init__(self, url: str, error: Exception) -> None:
        super().__init__("SERVER_UNREACHABLE", f"cannot reach {url}: {error}", None, None)


class ServerTimeout(NoAnswer):
    """The server took the connection but did not answer within the read timeout: it is there, and busy."""

    def __init__(self, url: str, seconds: float | None) -> None:
        within = f"within {seconds:g} s" if seconds is not None else "in time"
        super().__init__("SERVER_TIMEOUT", f"the server did not answer {within} ({url} took the request and may be "
                         "busy; allow longer with --read-timeout or TUNELAB_READ_TIMEOUT_S)",
                         {"read_timeout_s": seconds}, None)


def no_answer(url: str, error: httpx.TransportError) -> NoAnswer:
    """The error for a request that got no HTTP answer: a timeout after the request was sent is not unreachable."""
    if isinstance(error, httpx.ReadTimeout | httpx.WriteTimeout):
        phase = "read" if isinstance(error, httpx.ReadTimeout) else "write"
        return ServerTimeout(url, error.request.extensions.get("timeout", {}).get(phase))
    return ServerUnreachable(url, error)


def error_from_response(response: httpx.Response) -> TunelabError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return TunelabError(error["code"], str(error.get("message", "")), error.get("details"), response.status_code)
    text = response.text.strip()[:200] or response.reason_phrase
    return TunelabError(f"HTTP_{response.status_code}", text, None, response.status_code)


class ApiClient:
    """Bearer-token JSON calls against one server; thread-safe (one pooled httpx.Client)."""

    def __init__(self, config: ClientConfig, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        headers = {"User-Agent": f"tunelab-client/{__version__}", "Accept": "application/json"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        # Waiting for a free pooled connection is like connecting; sending the body, like waiting for the answer.
        timeout = httpx.Timeout(connect=config.connect_timeout_s, read=config.read_timeout_s,
                                write=config.read_timeout_s, pool=config.connect_timeout_s)
        self._http = httpx.Client(base_url=config.url, headers=headers, timeout=timeout, transport=transport)

    def url_of(self, path: str) -> str:
        if path.startswith(("http://", "https://", "/api/")):
            return path
        return API_PREFIX + (path if path.startswith("/") else "/" + path)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request; the decoded JSON body (None for an empty one), or a TunelabError."""
        try:
            response = self._http.request(method, self.url_of(path), **kwargs)
        except httpx.TransportError as error:
            raise no_answer(self.config.url, error) from error
        if response.status_code >= 400:
            raise error_from_response(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    def launch(self, path: str, body: dict[str, Any], idempotency_key: str | None = None,
               attempts: int = LAUNCH_ATTEMPTS) -> Any:
        """POST what launches a run or a study under an Idempotency-Key (a fresh one unless given). Sent again with
        the same key when no answer came back, the server was unavailable (503) or still busy with an earlier try
        (409 IDEMPOTENCY_KEY_IN_USE), up to `attempts` times: a first try that the server carried out but answered
        late is then answered, not launched again. When every try went unanswered, the error's details name the key,
        to send the launch again later without a second run."""
        key = idempotency_key or str(uuid.uuid4())
        attempt, backoff = 1, LAUNCH_BACKOFF_S
        while True:
            try:
                return self.post(path, json=body, headers={IDEMPOTENCY_HEADER: key})
            except TunelabError as error:
                if not (isinstance(error, NoAnswer) or error.status == 503 or error.code == "IDEMPOTENCY_KEY_IN_USE"):
                    raise
                if attempt >= attempts:
                    error.details = {**(error.details if isinstance(error.details, dict) else {}),
                                     "idempotency_key": key, "attempts": attempts}
                    error.message += (f"; tried {attempts} times with Idempotency-Key {key}: sending the launch again "
                                      "with that key returns what it created instead of launching twice")
                    raise
            time.sleep(backoff)
            attempt, backoff = attempt + 1, backoff * 2

    @contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        """A response whose body is read as it arrives (an export, an event stream), or a TunelabError."""
        try:
            with self._http.stream(method, self.url_of(path), **kwargs) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_from_response(response)
                yield response
        except httpx.TransportError as error:
            raise no_answer(self.config.url, error) from error

    def stream_sse(self, path: str, last_event_id: str | int | None = None,
                   **kwargs: Any) -> Iterator[tuple[str | None, str, Any]]:
        """Yield (id, event, data) per Server-Sent Event until the server closes the stream.

        data is decoded JSON when it parses, else the raw text; keep-alive comments are skipped. The caller
        reconnects with the last id it saw to resume without losing events.
        """
        headers = {"Accept": "text/event-stream", **kwargs.pop("headers", {})}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        timeout = httpx.Timeout(self._http.timeout.connect, read=SSE_READ_TIMEOUT_S)
        with self.stream("GET", path, headers=headers, timeout=timeout, **kwargs) as response:
            yield from parse_sse(response.iter_lines())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ApiClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str, Any]]:
    """The text/event-stream format: fields until a blank line; `:` starts a comment."""
    event_id: str | None = None
    event = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event_id, event, _decoded("\n".join(data))
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            event_id = value
        elif field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event_id, event, _decoded("\n".join(data))


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
