"""The live path at scale, against real processes and a real Redis: one subscription per API process fans out to
every stream, one SQL read per notification serves every stream of a run, streams follow SQL while Redis is away,
and a revoked share link ends its streams within 2 s."""

import asyncio
import json
import time

import httpx
import psutil
import redis
from sqlalchemy import select

from tests.conftest import wait_for
from tests.sse import SseReader

API = "/api/v1"
EXTERNAL = {"method": "lora", "model": "tunelab-tiny", "external": True}


def _external_run(api: httpx.Client) -> dict:
    return api.post("/runs", json=EXTERNAL).raise_for_status().json()


def _log(api: httpx.Client, run_id: int, first_step: int, steps: int = 2) -> None:
    points = [{"key": key, "step": step, "value": 0.5} for step in range(first_step, first_step + steps)
              for key in ("loss", "lr")]
    api.post(f"/runs/{run_id}/metrics", json={"points": points}).raise_for_status()


def _stored(api: httpx.Client, run_id: int) -> set[tuple[str, int]]:
    body = api.get(f"/runs/{run_id}/metrics", params={"max_points": 10_000}).raise_for_status().json()
    return {(series["key"], step) for series in body["series"] for step in series["step"]}


def _subscribed_connections(api_base_url: str, redis_client: redis.Redis) -> list[dict]:
    """The Redis clients of the API process at `api_base_url` that hold a subscription (CLIENT LIST, matched on the
    API process's own TCP connections)."""
    port = int(api_base_url.rsplit(":", 1)[1])
    pid = next(c.pid for c in psutil.net_connections("tcp") if c.laddr.port == port and c.status == "LISTEN")
    redis_port = redis_client.connection_pool.connection_kwargs.get("port", 6379)
    ours = {f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process(pid).net_connections("tcp")
            if c.raddr and c.raddr.port == redis_port}
    return [client for client in redis_client.client_list()
            if client["addr"] in ours and (int(client["sub"]) or int(client["psub"]))]


def test_one_subscription_per_process_serves_every_stream_every_point_once(api_server, api, redis_url):
    run = _external_run(api)
    url, auth = f"{api_server}{API}/runs/{run['id']}/events", {"Authorization": api.headers["Authorization"]}
    readers = [SseReader(url, auth).start() for _ in range(8)]
    wait_for(lambda: all("status" in reader.kinds() for reader in readers), 60, 0.05, "every stream to open")

    subscriptions = _subscribed_connections(api_server, redis.Redis.from_url(redis_url))
    assert len(subscriptions) == 1, subscriptions
    assert (subscriptions[0]["psub"], subscriptions[0]["sub"]) == ("1", "2"), "run:*, the rights and watch channels"

    for batch in range(10):
        _log(api, run["id"], 1 + 2 * batch)
    api.post(f"/runs/{run['id']}/cancel").raise_for_status()
    stored = _stored(api, run["id"])
    assert len(stored) == 40
    for reader in readers:
        assert reader.finished.wait(30), reader.kinds()[-5:]
        received = reader.points()
        assert len(received) == len(set(received)) and set(received) == stored
        assert reader.kinds()[-1] == "end" and len(reader.sent_last_event_ids) == 1


def test_a_run_nobody_watches_sends_no_notices_and_a_viewer_who_comes_later_gets_every_point(api_server, api,
                                                                                             redis_url):
    """Metrics notices of a run nobody watches are skipped (services/live/watched_runs): each would be heard, and
    dropped, by every API process. A viewer's hub announces the run before its first read."""
    from tunelab.services.live.events import run_channel

    run = _external_run(api)
    listener = redis.Redis.from_url(redis_url, decode_responses=True).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(run_channel(run["id"]))

    def notices_of_one_batch(first_step: int) -> int:
        _log(api, run["id"], first_step)
        heard = 0
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            message = listener.get_message(timeout=0.1)
            heard += message is not None and json.loads(message["data"])["type"] == "metrics"
        return heard

    # An API process that has only just started hearing who watches counts every run as watched.
    step = iter(range(1, 10_000, 2))
    wait_for(lambda: notices_of_one_batch(next(step)) == 0, 60, 0, "a batch of an unwatched run sent no notice")

    reader = SseReader(f"{api_server}{API}/runs/{run['id']}/events",
                       {"Authorization": api.headers["Authorization"]}).start()
    wait_for(lambda: "status" in reader.kinds(), 60, 0.05, "the stream to open")
    assert notices_of_one_batch(next(step)) == 1, "a watched run's flush is announced"
    for _ in range(3):
        _log(api, run["id"], next(step))
    api.post(f"/runs/{run['id']}/cancel").raise_for_status()
    assert reader.finished.wait(30), reader.kinds()[-5:]
    assert set(reader.points()) == _stored(api, run["id"])
    listener.close()


def _parse(text: str) -> list[tuple[str, dict | list]]:
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def _run_in_sql(name: str) -> int:
    """An external run of the default project, made directly in the session's database."""
    from tunelab.db.models import Project, Run, RunStatus
    from tunelab.db.models.project import DEFAULT_PROJECT
    from tunelab.db.session import session_scope

    with session_scope() as session:
        project_id = session.scalar(select(Project.id).where(Project.name == DEFAULT_PROJECT))
        run = Run(project_id=project_id, name=name, objective="sft", method="lora", model="x", config={}, seed=0,
                  queue="nobody", external=True, status=RunStatus.running)
        session.add(run)
        session.flush()
        return run.id


def test_one_sql_read_per_notification_serves_every_stream_of_the_run(settings, admin_token, redis_url):
    """In-process, with the real Redis and database: streams are consumed as uvicorn would, flushes are logged as
    the ingest route does, and the hub counts its SQL reads."""
    from tunelab.db.session import session_scope
    from tunelab.services import metrics
    from tunelab.services.live import live
    from tunelab.services.live.live_hub import LiveHub

    flushes, streams = 8, 10
    run_id = _run_in_sql("hub reads")

    def flush(step: int) -> None:
        with session_scope() as session:
            metrics.ingest_points(session, run_id, [("loss", step, 1.0, time.time()), ("lr", step, 0.1, time.time())])

    async def follow(stream, received: list) -> None:
        async for chunk in stream:
            received.extend(_parse(chunk))

    async def scenario() -> LiveHub:
        hub = LiveHub(settings)
        await hub.start()
        try:
            async with asyncio.timeout(30):
                while not hub.subscribed:
                    await asyncio.sleep(0.05)
            received: list[list] = [[] for _ in range(streams)]
            opened = [live.run_events(hub, run_id, 0) for _ in range(streams)]
            tasks = [asyncio.create_task(follow(stream, got)) for stream, got in zip(opened, received, strict=True)]
            async with asyncio.timeout(30):
                while not all(any(kind == "status" for kind, _ in got) for got in received):
                    await asyncio.sleep(0.05)
            for step in range(1, flushes + 1):
                await asyncio.to_thread(flush, step)
                await asyncio.sleep(0.1)  # separate notifications, not one burst
            async with asyncio.timeout(30):
                while not all(sum(len(data) for kind, data in got if kind == "metrics") == 2 * flushes
                              for got in received):
                    await asyncio.sleep(0.05)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for got in received:
                points = [(p["key"], p["step"]) for kind, data in got if kind == "metrics" for p in data]
                assert len(points) == len(set(points)) == 2 * flushes
        finally:
            await hub.stop()
        return hub

    hub = asyncio.run(scenario())
    # Per stream, it would be streams × flushes = 80 reads of points.
    assert 1 <= hub.reads["points"] <= flushes, hub.reads
    assert hub.reads["status"] == 1 and hub.reads["replay"] == 0, hub.reads


def test_one_read_for_many_runs_cut_at_its_limit_never_splits_a_flush(settings, admin_token, monkeypatch):
    """The shared read takes every due run in one query; when it hits its limit, the run it was cut in keeps only
    whole flushes and it and the runs after it are read again, until every flush came exactly once, in order."""
    from tunelab.db.session import session_scope
    from tunelab.services import metrics
    from tunelab.services.live import live_hub

    run_ids = [_run_in_sql(f"cut {i}") for i in range(3)]
    for run_id in run_ids:
        for step in range(4):  # 4 flushes of 3 points per run
            with session_scope() as session:
                metrics.ingest_points(session, run_id, [(key, step, 1.0, 0.0) for key in ("a", "b", "c")])
    monkeypatch.setattr(live_hub, "READ_LIMIT", 7)
    feeds = {run_id: live_hub.RunFeed(run_id) for run_id in run_ids}
    for feed in feeds.values():
        feed.apply(live_hub.FeedRead(status={"metric_seq": 0, "status": "running"}), status_asked=True)
        feed.points_due = True
    for _ in range(20):
        due = [feed.ask() for feed in feeds.values() if feed.points_due]
        if not due:
            break
        for run_id, read in live_hub.read_feeds(due).items():
            assert all(event.count('"key"') == 3 for _, event in read.flushes), "only whole flushes"
            feeds[run_id].apply(read, status_asked=False)
    for feed in feeds.values():
        assert not feed.points_due
        text, last_seq = feed.events_after(0)
        assert last_seq == 4 and [kind for kind, _ in _parse(text)] == ["metrics"] * 4
        assert [p["step"] for _, data in _parse(text) for p in data] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_streams_follow_sql_while_redis_is_away(private_stack):
    api, redis_server, base_url = private_stack.api, private_stack.redis, private_stack.api_server.base_url
    run = _external_run(api)
    auth = {"Authorization": api.headers["Authorization"]}
    reader = SseReader(f"{base_url}{API}/runs/{run['id']}/events", auth).start()
    try:
        wait_for(lambda: "status" in reader.kinds(), 60, 0.05, "the stream to open")
        _log(api, run["id"], 1)
        wait_for(lambda: len(reader.points()) == 4, 30, 0.05, "points while Redis is up")

        redis_server.kill()
        _log(api, run["id"], 3)
        wait_for(lambda: len(reader.points()) == 8, 30, 0.1, "points read from SQL while Redis is down")

        redis_server.start()
        wait_for(lambda: _subscribed_connections(base_url, redis_server.client()), 30, 0.2,
                 "the hub to subscribe again")
        _log(api, run["id"], 5)
        wait_for(lambda: len(reader.points()) == 12, 30, 0.05, "points after Redis is back")
        api.post(f"/runs/{run['id']}/cancel").raise_for_status()
        assert reader.finished.wait(30)
        assert sorted(reader.points()) == sorted(_stored(api, run["id"]))
        assert len(reader.sent_last_event_ids) == 1, "the stream itself never broke"
    finally:
        reader.stop()


def test_a_revoked_share_link_ends_its_streams_within_2_s(api_server, api):
    run = _external_run(api)
    link = api.post("/shares", json={"run_ids": [run["id"]]}).raise_for_status().json()
    url = f"{api_server}{API}/runs/{run['id']}/events?share={link['token']}"
    readers = [SseReader(url).start() for _ in range(3)]
    try:
        wait_for(lambda: all("status" in reader.kinds() for reader in readers), 60, 0.05, "the shared streams")
        revoked_at = time.monotonic()
        api.delete(f"/shares/{link['id']}").raise_for_status()
        for reader in readers:
            assert reader.finished.wait(10)
            assert reader.kinds()[-1] == "revoked"
            # A re-check each second, answered from a read at most 0.5 s old.
            assert reader.received_at[-1] - revoked_at < 2.0
    finally:
        for reader in readers:
            reader.stop()
