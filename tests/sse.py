"""A browser's EventSource, for tests against a real API process: it follows one stream in a thread of its own and,
when the server closes the stream or cannot be reached, reconnects after the server's `retry:` with Last-Event-ID,
until an `end` (or `revoked`) event."""

import json
import threading
import time
from dataclasses import dataclass, field

import httpx

FINAL_EVENTS = ("end", "revoked")


@dataclass
class Closed:
    """A connection that ended without a final event: when, and the retry hint in force then."""

    at: float
    retry_ms: int


@dataclass
class SseReader:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    retry_ms: int = 3000  # EventSource's default until the server says otherwise
    events: list[tuple[str, str | None, object]] = field(default_factory=list)  # (event, id, data)
    received_at: list[float] = field(default_factory=list)
    sent_last_event_ids: list[str | None] = field(default_factory=list)  # per connection attempt that answered
    closes: list[Closed] = field(default_factory=list)
    finished: threading.Event = field(default_factory=threading.Event)
    _last_id: str | None = None
    _stopping: bool = False

    def start(self) -> "SseReader":
        threading.Thread(target=self._follow, name=f"sse {self.url}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping = True

    def kinds(self) -> list[str]:
        return [event for event, _, _ in self.events]

    def points(self) -> list[tuple[str, int]]:
        """Every (key, step) received, in order, duplicates kept."""
        return [(p["key"], p["step"]) for event, _, data in self.events if event == "metrics" for p in data]

    def _follow(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(5, read=30)) as client:
            while not self._stopping and not self.finished.is_set():
                headers = {**self.headers, "Accept": "text/event-stream"}
                if self._last_id is not None:
                    headers["Last-Event-ID"] = self._last_id
                try:
                    with client.stream("GET", self.url, headers=headers) as response:
                        if response.status_code != 200:
                            raise AssertionError(f"{self.url} answered {response.status_code}: {response.read()}")
                        self.sent_last_event_ids.append(self._last_id)
                        self._read(response)
                except httpx.TransportError:
                    pass  # not listening (a restart): try again after the retry delay, as a browser does
                if not self.finished.is_set():
                    self.closes.append(Closed(time.monotonic(), self.retry_ms))
                    time.sleep(self.retry_ms / 1000)

    def _read(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if self._stopping:
                return
            if line.startswith(":"):
                continue
            if line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "retry" in fields:
                self.retry_ms = int(fields["retry"])
            if "id" in fields:
                self._last_id = fields["id"]
            if "event" in fields:
                self.events.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
                self.received_at.append(time.monotonic())
                if fields["event"] in FINAL_EVENTS:
                    self.finished.set()
                    return
            fields = {}
