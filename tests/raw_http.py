"""HTTP over a raw socket, for tests that control what is sent and when (a body that never ends, a head without its
body): the request line and headers, and the answer read back within a deadline."""

import json
import socket
from urllib.parse import urlsplit


def open_socket(base_url: str) -> socket.socket:
    url = urlsplit(base_url)
    return socket.create_connection((url.hostname, url.port), timeout=30)


def request_head(base_url: str, path: str, content_type: str, headers: dict[str, str]) -> bytes:
    """A POST's request line and headers, up to the blank line that ends them."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {urlsplit(base_url).netloc}", f"Content-Type: {content_type}",
             *(f"{name}: {value}" for name, value in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket, wait_s: float = 20) -> tuple[int, dict]:
    """The status and JSON body of the response, read within wait_s."""
    sock.settimeout(wait_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split(b" ")[1]), json.loads(body[:length])
