"""`tunelab up | api | worker | migrate | assets | set-password | openapi | train` (the server verbs), and the client
verbs `login | runs | datasets | metrics | playground` (tunelab.commands)."""

import argparse
import logging
import os
import signal
import subprocess
import sys
import time

from tunelab.commands import add_client_commands
from tunelab.commands.options import EXIT_CODES_HELP, ArgumentParser
from tunelab.core.processes import die_with_parent
from tunelab.core.settings import get_settings


def _die_with_parent() -> None:
    # Children of `tunelab up` get SIGTERM if `up` itself dies, so nothing is left orphaned.
    die_with_parent(signal.SIGTERM)


def cmd_migrate(_: argparse.Namespace) -> None:
    from tunelab.db.migrate import upgrade

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.database_url)
    print(f"database at head: {_redacted(settings.database_url)}")


def cmd_assets(_: argparse.Namespace) -> None:
    from tunelab.assets.build import build_assets

    settings = get_settings()
    build_assets(settings.models_dir, settings.samples_dir)
    print(f"bundled models in {settings.models_dir}, sample datasets in {settings.samples_dir}")


def _read_new_password() -> str:
    """From the terminal (asked twice, not echoed), or the first line of stdin for scripts."""
    import getpass

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    password = getpass.getpass("new password: ")
    if getpass.getpass("again: ") != password:
        sys.exit("the two passwords differ; nothing changed")
    return password


def cmd_set_password(args: argparse.Namespace) -> None:
    """The way back in for a locked-out admin (there is no email reset): run on the server, like Grafana's
    `grafana cli admin reset-admin-password`. Ends the account's browser sessions."""
    from tunelab.core.errors import AppError
    from tunelab.db.session import session_scope
    from tunelab.services.accounts import users

    password = _read_new_password()
    try:
        with session_scope() as session:
            user = users.set_password(session, args.email, password, make_admin=args.admin)
            print(f"password set for {user.email}" + (" (admin)" if user.is_admin else ""))
    except AppError as exc:
        sys.exit(exc.message)


def cmd_train(args: argparse.Namespace) -> None:
    """One run's training process; a worker starts it for a run it has claimed (see worker.supervisor)."""
    from tunelab.db.models import RunStatus
    from tunelab.db.session import name_process
    from tunelab.training.distributed import process_count
    from tunelab.worker.execution import configure_run_log, train_claimed_run, wait_for_claimed_run

    name_process("train")
    if process_count() > 1:
        # A rank of a multi-process run: torchrun started it in a session of its own, where the supervisor's kill of
        # its process group does not reach; it dies with torchrun instead (which dies with the supervisor).
        die_with_parent()
    run_id, attempt = args.run_id, args.attempt
    if args.warm:
        claimed = wait_for_claimed_run(sys.stdin.buffer)
        if claimed is None:
            return
        run_id, attempt = claimed
    configure_run_log()
    status = train_claimed_run(run_id, attempt)
    if status == RunStatus.failed.value and process_count() > 1:
        # The other ranks may be waiting on this one inside a collective: a failed exit makes torchrun stop them now.
        sys.exit(1)


def cmd_openapi(_: argparse.Namespace) -> None:
    """Print the OpenAPI document; the frontend's typed client is generated from it."""
    import json

    from tunelab.main import create_app

    print(json.dumps(create_app().openapi(), indent=2, sort_keys=True))


def cmd_api(args: argparse.Namespace) -> None:
    import uvicorn

    from tunelab.db.session import name_process

    settings = get_settings()
    name_process("api")
    processes = settings.api_workers
    # Before uvicorn configures logging, hence a print, as the other verbs' status lines.
    print(f"tunelab api: {settings.describe_db_budget()}"
          + (f"; {processes} API processes: at most {processes * settings.db_max_connections}" if processes > 1 else ""),
          file=sys.stderr, flush=True)
    # On SIGTERM, the app ends its live streams with a short retry hint before uvicorn's graceful wait (main._lifespan).
    # The app writes the access log itself, in batches (api/access_log.py), so uvicorn's is off; no `server` header
    # names what answers. X-Forwarded-* only from the proxies the deployment names: uvicorn would believe any process
    # on this host, and any client could then pick the address its failed sign-ins are counted against.
    uvicorn.run("tunelab.main:create_served_app", factory=True, host=args.host or settings.host,
                port=args.port or settings.port, workers=settings.api_workers, log_level="info", access_log=False,
                server_header=False, timeout_graceful_shutdown=3, proxy_headers=bool(settings.trusted_proxies.strip()),
                forwarded_allow_ips=settings.trusted_proxies)


def cmd_worker(args: argparse.Namespace) -> None:
    from tunelab.db.session import name_process
    from tunelab.services.runs import run_queues
    from tunelab.worker.celery_app import WORKER_QUEUES_ENV, celery_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = get_settings()
    name_process("worker")
    queues = args.queues or settings.queues
    names = [queue.strip() for queue in queues.split(",") if queue.strip()]
    refusal = run_queues.worker_refusal(settings, names)
    if refusal:
        sys.exit(f"tunelab worker: {refusal}")
    for warning in run_queues.worker_warnings(settings, names):
        logging.getLogger("tunelab.worker").warning(warning)
    if names == [settings.infer_queue]:
        logging.getLogger("tunelab.worker").info("the playground's inference worker: it answers prompts and trains no "
                                                 "runs (their queues are TUNELAB_RUN_QUEUES)")
    logging.getLogger("tunelab.worker").info(
        "%s, for each of: this worker, its %d pool processes and each training process they start",
        settings.describe_db_budget(), args.concurrency)
    os.environ[WORKER_QUEUES_ENV] = queues
    # The process id makes the node name unique per worker: two workers of the same queues on one host shared one
    # name, and so one presence key, and /health showed one worker for two.
    node_name = f"tunelab-{queues.replace(',', '-')}-{os.getpid()}@%h"
    celery_app.worker_main([
        "worker", "--queues", queues, "--concurrency", str(args.concurrency), "--pool", "prefork",
        "--loglevel", "INFO", "--hostname", node_name, "--without-gossip", "--without-mingle",
    ])


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _first_visit_hint() -> str:
    from tunelab.db.session import session_scope
    from tunelab.services.accounts.users import needs_first_admin

    with session_scope() as session:
        return "  Open it to create the admin account.\n" if needs_first_admin(session) else ""


def cmd_up(args: argparse.Namespace) -> None:
    """Everything on one machine: assets, migrations, Redis (embedded unless configured), API, one training worker
    and one inference worker (the playground answers while a run trains)."""
    settings = get_settings()
    cmd_assets(args)
    cmd_migrate(args)
    embedded = None
    redis_url = settings.redis_url
    if not redis_url:
        from tunelab.core.redis import start_embedded_redis, stop_embedded_redis

        embedded = start_embedded_redis()
        redis_url = f"redis+socket://{embedded.socket_file}"
        print(f"embedded Redis (pid {embedded.pid}) at {embedded.socket_file}", flush=True)
    env = {**os.environ, "TUNELAB_REDIS_URL": redis_url, "TUNELAB_DATA_DIR": str(settings.data_dir),
           "TUNELAB_DATABASE_URL": settings.database_url}
    host, port = args.host or settings.host, args.port or settings.port
    me = [sys.executable, "-m", "tunelab.cli"]
    parts = {
        "api": subprocess.Popen([*me, "api", "--host", host, "--port", str(port)], env=env,
                                preexec_fn=_die_with_parent),
        "worker": subprocess.Popen([*me, "worker", "--queues", settings.queues, "--concurrency", "1"], env=env,
                                   preexec_fn=_die_with_parent),
        "inference worker": subprocess.Popen([*me, "worker", "--queues", settings.infer_queue, "--concurrency", "1"],
                                             env=env, preexec_fn=_die_with_parent),
    }
    children = list(parts.values())
    print(f"\n  Tunelab is starting at http://{host}:{port}   (API docs: http://{host}:{port}/api/docs)\n"
          f"{_first_visit_hint()}  Press Ctrl-C to stop.\n", flush=True)

    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.5)
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if embedded is not None:
            stop_embedded_redis(embedded)
        print("Tunelab stopped.")
    failed = [name for name, child in parts.items() if child.returncode not in (0, -signal.SIGTERM, None)]
    if failed and not stopping:
        sys.exit(f"stopped because a part exited: {', '.join(failed)}")


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="tunelab", description="Launch, watch and compare LLM fine-tuning runs.",
                            epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start everything on this machine (embedded SQLite + Redis unless configured)")
    api = sub.add_parser("api", help="serve the HTTP API")
    for p in (up, api):
        p.add_argument("--host", help="listen address (TUNELAB_HOST, default 127.0.0.1)")
        p.add_argument("--port", type=int, help="listen port (TUNELAB_PORT, default 8000)")
    up.set_defaults(func=cmd_up)
    api.set_defaults(func=cmd_api)
    worker = sub.add_parser("worker", help="run a training worker (or, with --queues infer, the playground's)")
    worker.add_argument("--queues", help="comma-separated queues to consume (TUNELAB_QUEUES, default cpu; the "
                                         "playground's, TUNELAB_INFER_QUEUE, default infer, alone)")
    worker.add_argument("--concurrency", type=int, default=1, help="runs trained at once (default 1)")
    worker.set_defaults(func=cmd_worker)
    sub.add_parser("migrate", help="upgrade the database schema to the latest version").set_defaults(func=cmd_migrate)
    sub.add_parser("assets", help="build the bundled tiny model and sample datasets").set_defaults(func=cmd_assets)
    sub.add_parser("openapi", help="print the OpenAPI document of the HTTP API").set_defaults(func=cmd_openapi)
    train = sub.add_parser("train", help="train a run a worker has claimed (workers start this themselves)")
    train.add_argument("run_id", type=int, nargs="?")
    train.add_argument("--attempt", type=int, help="the attempt the worker claimed")
    train.add_argument("--warm", action="store_true",
                       help="load the training libraries first, then read `RUN_ID ATTEMPT` from stdin")
    train.set_defaults(func=cmd_train)
    set_password = sub.add_parser("set-password", help="set an account's password (asked, or read from stdin)")
    set_password.add_argument("email")
    set_password.add_argument("--admin", action="store_true", help="also make the account an active admin")
    set_password.set_defaults(func=cmd_set_password)
    add_client_commands(sub)
    args = parser.parse_args(argv)
    if args.func is cmd_train and not args.warm and (args.run_id is None or args.attempt is None):
        train.error("give RUN_ID and --attempt, or --warm")
    args.func(args)


if __name__ == "__main__":
    main()
