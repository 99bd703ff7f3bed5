"""The API restarts under a live viewer: process A gets SIGTERM while points are being logged, process B starts on
the same port, and the viewer (an EventSource-like reader) moves over without a gap or a duplicate."""

import threading
import time

import httpx

from tests.conftest import ApiProcess, first_admin_tokens, fresh_install, wait_for
from tests.sse import SseReader

# uvicorn's graceful shutdown waits up to 3 s (cli.cmd_api) for open responses; the streams must not wait for it.
GRACEFUL_TIMEOUT_S = 3.0
SHUTDOWN_RETRY_MS = 250


class Logger:
    """Logs one batch of three keys every 50 ms, as an external trainer does, retrying a batch until an API takes it
    (while no API listens, a trainer's flush fails and is sent again)."""

    def __init__(self, base_url: str, token: str, run_id: int) -> None:
        self.url = f"{base_url}/api/v1/runs/{run_id}/metrics"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.steps_stored = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="logger", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                step = self.steps_stored + 1
                points = [{"key": key, "step": step, "value": 1.0 / step} for key in ("loss", "lr", "grad_norm")]
                try:
                    stored = client.post(self.url, json={"points": points}, headers=self.headers).status_code == 200
                except httpx.TransportError:
                    stored = False
                if stored:
                    self.steps_stored = step
                self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_viewer_moves_to_the_next_api_process_without_a_gap_or_a_duplicate(assets, redis_url, tmp_path):
    env = fresh_install(tmp_path, assets, "restart")
    servers = [ApiProcess(tmp_path / "api-a.log", env)]
    token = first_admin_tokens(servers[0].base_url, "restart")[0]["token"]
    auth = {"Authorization": f"Bearer {token}"}
    api_url = f"{servers[0].base_url}/api/v1"
    run = httpx.post(f"{api_url}/runs", headers=auth,
                     json={"method": "lora", "model": "tunelab-tiny", "external": True}).raise_for_status().json()
    reader = SseReader(f"{api_url}/runs/{run['id']}/events", auth).start()
    logger = Logger(servers[0].base_url, token, run["id"])
    try:
        wait_for(lambda: len(reader.points()) >= 30, 60, 0.05, "points to stream from API A")

        stopping_at = time.monotonic()
        servers[0].proc.terminate()
        wait_for(lambda: reader.closes, 10, 0.01, "the stream on API A to end")
        ended_after = reader.closes[0].at - stopping_at
        assert ended_after < GRACEFUL_TIMEOUT_S / 2, f"the stream ended {ended_after:.2f} s after SIGTERM"
        assert reader.closes[0].retry_ms == SHUTDOWN_RETRY_MS, "the stream ended with its short retry hint"
        servers[0].proc.wait(timeout=30)
        received_from_a = len(reader.points())

        servers.append(ApiProcess(tmp_path / "api-b.log", env, port=servers[0].port))
        wait_for(lambda: len(reader.points()) >= received_from_a + 30, 60, 0.05, "points to stream from API B")
        assert reader.sent_last_event_ids[-1] is not None, "the reconnect resumed after the last event it had"
        logger.stop()
        httpx.post(f"{api_url}/runs/{run['id']}/cancel", headers=auth).raise_for_status()
        assert reader.finished.wait(30), f"no end event; saw {reader.kinds()[-5:]}"

        stored = httpx.get(f"{api_url}/runs/{run['id']}/metrics", headers=auth,
                           params={"max_points": 10_000}).raise_for_status().json()
        stored_points = {(series["key"], step) for series in stored["series"] for step in series["step"]}
        received = reader.points()
        assert len(received) == len(set(received)), "no point twice"
        assert set(received) == stored_points, "every stored point, from both processes"
        assert len(stored_points) == 3 * logger.steps_stored
        assert reader.kinds()[-1] == "end"
    finally:
        logger.stop()
        reader.stop()
        for server in servers:
            server.stop()
