"""The team deployment (Dockerfile, .dockerignore, docker-compose.yml) without Docker, which these machines can't run:
the Dockerfile is read instruction by instruction and compose's resolved configuration comes from
`docker-compose config`."""

import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

import tunelab.core.settings as settings_module
from tests.conftest import IN_CI
from tunelab.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
TUNELAB_SERVICES = ("api", "worker-cpu", "worker-gpu")
TORCH_INDEX = re.compile(r"https://download\.pytorch\.org/whl/(?P<variant>[^/\s]+)")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    flags: dict[str, str]
    args: list[str]
    shell: str
    workdir: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [instruction for instruction in self.instructions if instruction.keyword == keyword]


def _logical_lines(text: str) -> list[str]:
    """Docker's line rules: a trailing backslash continues the instruction, and comment lines are dropped even
    inside a continuation."""
    lines, pending = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#") or (not line.strip() and not pending):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    if pending.strip():
        lines.append(pending)
    return lines


def _split_arguments(rest: str) -> tuple[dict[str, str], list[str], str]:
    """Leading --flags, then the arguments: a JSON array (exec form) or shell words; and the text after the flags,
    which a shell-form RUN hands to the shell as it is."""
    rest, flags = rest.strip(), {}
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        name, _, value = flag[2:].partition("=")
        flags[name] = value
        rest = rest.strip()
    if rest.startswith("["):
        try:
            return flags, json.loads(rest), ""
        except json.JSONDecodeError:
            pass  # Docker runs a malformed array as a shell command
    return flags, shlex.split(rest), rest


def parse_dockerfile(path: Path) -> list[Stage]:
    stages: list[Stage] = []
    for line in _logical_lines(path.read_text()):
        keyword, _, rest = line.strip().partition(" ")
        keyword = keyword.upper()
        flags, args, shell = _split_arguments(rest)
        if keyword == "FROM":
            name = args[2] if len(args) == 3 and args[1].upper() == "AS" else None
            parent = next((stage for stage in stages if stage.name == args[0]), None)
            stages.append(Stage(base=args[0], name=name))
            workdir = parent.instructions[-1].workdir if parent and parent.instructions else "/"
            stages[-1].instructions.append(Instruction(keyword, flags, args, shell, workdir))
            continue
        stage = stages[-1]
        workdir = stage.instructions[-1].workdir
        if keyword == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, args[0]))
        stage.instructions.append(Instruction(keyword, flags, args, shell, workdir))
    return stages


def shell_commands(instruction: Instruction) -> list[list[str]]:
    """A RUN's simple commands: its shell line split at &&, ||, ; and |, or its exec-form array."""
    if not instruction.shell:
        return [instruction.args]
    lexer = shlex.shlex(instruction.shell, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if set(token) <= set("&|;"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def resolve(workdir: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(workdir, path))


def expand(word: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda match: values[match.group(1) or match.group(2)], word)


def stage_args(stage: Stage, build_args: dict[str, str]) -> dict[str, str]:
    values = {}
    for instruction in stage.all("ARG"):
        name, _, default = instruction.args[0].partition("=")
        values[name] = build_args.get(name, default)
    return values


def find_stage(stages: list[Stage], reference: str) -> Stage:
    return stages[int(reference)] if reference.isdigit() else next(s for s in stages if s.name == reference)


def pip_installs(stage: Stage) -> list[tuple[tuple[int, int], list[str]]]:
    """((instruction, command) position in the stage, arguments after `pip install`) of every pip install."""
    found = []
    for position, instruction in enumerate(stage.instructions):
        if instruction.keyword != "RUN":
            continue
        for order, command in enumerate(shell_commands(instruction)):
            through_python = command[:1] in (["python"], ["python3"]) and command[1:3] == ["-m", "pip"]
            words = command[2:] if through_python else command
            if words[:2] == ["pip", "install"]:
                found.append(((position, order), words[2:]))
    return found


def option_value(words: list[str], *names: str) -> str | None:
    for index, word in enumerate(words):
        for name in names:
            if word == name and index + 1 < len(words):
                return words[index + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def torch_index_of_image(stages: list[Stage], target: str | None, build_args: dict[str, str]) -> str:
    """The wheel index torch comes from in the image built with these settings, checking that pip installs it
    before the project (so that `pip install -e .` keeps it rather than taking PyPI's build)."""
    stage = find_stage(stages, target) if target else stages[-1]
    installs = pip_installs(stage)
    pinned_torch = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
                        if d.startswith("torch=="))
    torch_installs = [(position, words) for position, words in installs if pinned_torch in words]
    project_installs = [position for position, words in installs if option_value(words, "-e", "--editable")]
    assert torch_installs, f"the image's stage installs no {pinned_torch} of its own"
    assert project_installs, "the image's stage installs no editable project"
    position, words = torch_installs[0]
    assert position < project_installs[0], "torch must be installed before the project, or the project pulls PyPI's"
    index = option_value(words, "--index-url", "-i")
    assert index is not None, f"{pinned_torch} is installed without an --index-url naming its build"
    assert option_value(words, "--extra-index-url") is None, "an extra index lets pip pick another build"
    return expand(index, stage_args(stage, build_args))


def _compose(env_overrides: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    if binary is None:
        if IN_CI:
            pytest.fail("docker-compose is required in CI (make test installs it from Debian)")
        pytest.skip("docker-compose not installed (Debian package docker-compose)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNELAB_")} | env_overrides
    return subprocess.run([binary, "-f", str(ROOT / "docker-compose.yml"), "config", *arguments],
                          capture_output=True, text=True, cwd=ROOT, env=env)


SECRET = {"TUNELAB_SECRET_KEY": "0" * 64}


def test_docker_compose_file_is_valid():
    refused = _compose({}, "-q")
    assert refused.returncode != 0 and "TUNELAB_SECRET_KEY" in refused.stderr, "production needs a secret key"
    result = _compose(SECRET, "-q")
    assert result.returncode == 0, result.stderr
    services = _compose(SECRET, "--services").stdout.split()
    assert {"postgres", "redis", "api", "worker-cpu", "worker-infer", "worker-gpu"} <= set(services)
    infer = yaml.safe_load(_compose(SECRET).stdout)["services"]["worker-infer"]
    # The queue the API sends playground requests to by default (the tests' own environment names another).
    default_infer_queue = Settings.model_fields["infer_queue"].default
    assert infer["command"] == ["tunelab", "worker", "--queues", default_infer_queue, "--concurrency", "1"]


def _named_volume_target(volume: str | dict) -> tuple[str | None, str]:
    """(source, target) of a service's volume, in docker-compose's short form or the long one."""
    if isinstance(volume, dict):
        return volume.get("source"), volume["target"]
    source, target = volume.split(":")[:2]
    return source, target


def test_the_api_and_every_worker_keep_their_files_in_the_minio_bucket():
    credentials = {"MINIO_ROOT_USER": "operator", "MINIO_ROOT_PASSWORD": "from-the-env-file"}
    config = _compose(SECRET | credentials)
    assert config.returncode == 0, config.stderr
    resolved = yaml.safe_load(config.stdout)
    services = resolved["services"]
    assert {"minio", "minio-bucket"} <= set(services), "the compose file runs no MinIO and no bucket job"

    minio, bucket_job = services["minio"], services["minio-bucket"]
    assert re.fullmatch(r"minio/minio:RELEASE\.[\dT-]+Z", minio["image"]), "pin MinIO to a release tag"
    assert re.fullmatch(r"minio/mc:RELEASE\.[\dT-]+Z", bucket_job["image"]), "pin mc to a release tag"
    assert minio["healthcheck"]["test"], "the bucket job waits for a healthy MinIO"
    data = next(source for source, target in map(_named_volume_target, minio["volumes"]) if target == "/data")
    assert data in resolved["volumes"], "MinIO's data must outlive its container: a named volume"
    assert minio["environment"]["MINIO_ROOT_USER"] == credentials["MINIO_ROOT_USER"]
    assert minio["environment"]["MINIO_ROOT_PASSWORD"] == credentials["MINIO_ROOT_PASSWORD"]
    assert bucket_job["depends_on"]["minio"]["condition"] == "service_healthy"
    assert bucket_job.get("restart", "no") == "no", "a one-shot job: restarted, it never completes"

    tunelab_services = [name for name, service in services.items() if service.get("image", "").startswith("tunelab:")]
    assert {"api", "worker-cpu", "worker-infer", "worker-gpu"} <= set(tunelab_services)
    for name in tunelab_services:
        service, environment = services[name], services[name]["environment"]
        unknown = [key for key in environment if key.startswith("TUNELAB_")
                   and key.removeprefix("TUNELAB_").lower() not in Settings.model_fields]
        assert unknown == [], f"{name}: no such setting {unknown}"
        store = urlparse(environment.get("TUNELAB_ARTIFACT_URL", ""))
        assert store.scheme == "s3" and store.netloc and store.path.strip("/"), f"{name}: not on the S3 store"
        endpoint = urlparse(environment.get("TUNELAB_S3_ENDPOINT_URL", ""))
        assert endpoint.hostname == "minio" and endpoint.port == 9000, f"{name}: not pointed at the minio service"
        assert environment["AWS_ACCESS_KEY_ID"] == credentials["MINIO_ROOT_USER"], name
        assert environment["AWS_SECRET_ACCESS_KEY"] == credentials["MINIO_ROOT_PASSWORD"], name
        assert environment.get("AWS_DEFAULT_REGION"), f"{name}: boto3 needs a region"
        assert service["depends_on"].get("minio-bucket", {}).get("condition") == "service_completed_successfully", (
            f"{name} may start before its bucket exists")
        assert Settings(_env_file=None, artifact_url=environment["TUNELAB_ARTIFACT_URL"]).artifact_url

    # The job creates the bucket the API and workers name, on the server they reach, with the same credentials.
    command = bucket_job["command"]
    assert command[:2] == ["mb", "--ignore-existing"], command
    alias, _, created = command[2].partition("/")
    target = urlparse(bucket_job["environment"][f"MC_HOST_{alias}"])
    assert (target.hostname, target.port) == (endpoint.hostname, endpoint.port)
    assert (target.username, target.password) == (credentials["MINIO_ROOT_USER"], credentials["MINIO_ROOT_PASSWORD"])
    assert created == store.netloc

def test_the_image_serves_the_built_ui_from_where_settings_look():
    stages = parse_dockerfile(ROOT / "Dockerfile")
    final = stages[-1]

    node = next((stage for stage in stages[:-1] if stage.base.startswith("node:")), None)
    assert node is not None, "no stage builds the UI on an official node: image"
    tag_version = re.match(r"[\d.]+", node.base.split(":", 1)[1])
    assert tag_version, f"{node.base} names no Node version"
    # A tag without a minor version follows the newest release of that line.
    version = tuple(int(part) for part in tag_version.group().strip(".").split(".")) + (float("inf"),)
    assert version >= (20, 19), f"{node.base}: Vite needs Node 20.19 or newer"

    runs = [(position, command) for position, instruction in enumerate(node.instructions)
            if instruction.keyword == "RUN" for command in shell_commands(instruction)]
    install = next((position for position, command in runs if command[:2] == ["npm", "ci"]), None)
    build = next((position for position, command in runs if command[:3] == ["npm", "run", "build"]), None)
    assert install is not None and build is not None and install <= build, "the node stage must npm ci, then build"
    lock_copied = any(
        instruction.keyword == "COPY" and "from" not in instruction.flags and position < install
        and any(source.rstrip("/") in ("frontend/package-lock.json", "frontend") for source in instruction.args[:-1])
        for position, instruction in enumerate(node.instructions))
    assert lock_copied, "npm ci must install from the committed frontend/package-lock.json"
    out_dir = re.search(r"outDir:\s*\"([^\"]+)\"", (ROOT / "frontend" / "vite.config.ts").read_text()).group(1)
    built = resolve(node.instructions[build].workdir, out_dir)

    # Settings.frontend_dir's default is relative to the settings module; the module runs from where the image's
    # editable install copies backend/.
    backend_copy = next(instruction for instruction in final.all("COPY") if "from" not in instruction.flags
                        and instruction.args[0].rstrip("/") in ("backend", "./backend"))
    image_backend = resolve(backend_copy.workdir, backend_copy.args[-1])
    # The target may name extras, also through a build argument: `-e ".${EXTRAS:+[$EXTRAS]}"`.
    editable = [resolve(final.instructions[position].workdir,
                        re.sub(r"(\$\{[^}]*\}|\[[^]]*\])$", "", option_value(words, "-e", "--editable")))
                for (position, _), words in pip_installs(final) if option_value(words, "-e", "--editable")]
    assert editable == [posixpath.dirname(image_backend)], "the project must be installed editable from its copy"
    module = Path(settings_module.__file__).resolve()
    image_module = posixpath.join(image_backend, module.relative_to(ROOT / "backend").as_posix())
    default = Settings.model_fields["frontend_dir"].default
    expected = resolve(posixpath.dirname(image_module), os.path.relpath(default, module.parent))

    copies = [resolve(instruction.workdir, instruction.args[-1]) for instruction in final.all("COPY")
              if instruction.flags.get("from") in (node.name, str(stages.index(node)))
              and any(resolve(node.instructions[build].workdir, source) == built for source in instruction.args[:-1])]
    assert copies == [expected], f"the image must copy the node stage's {built} to {expected}, where settings look"


def test_the_gpu_worker_gets_pytorchs_cuda_build_and_the_others_the_cpu_one():
    config = _compose(SECRET)
    assert config.returncode == 0, config.stderr
    services = yaml.safe_load(config.stdout)["services"]
    stages = parse_dockerfile(ROOT / "Dockerfile")

    indexes, images = {}, {}
    for name in TUNELAB_SERVICES:
        build = services[name]["build"]
        assert Path(build["context"]).resolve() == ROOT and build.get("dockerfile", "Dockerfile") == "Dockerfile"
        index = torch_index_of_image(stages, build.get("target"), build.get("args") or {})
        match = TORCH_INDEX.fullmatch(index)
        assert match, f"{name}: torch comes from {index}, not one of PyTorch's wheel indexes"
        indexes[name], images[name] = match.group("variant"), services[name]["image"]

    assert re.fullmatch(r"cu\d{3,}", indexes["worker-gpu"]), f"worker-gpu gets torch's {indexes['worker-gpu']} build"
    assert indexes["api"] == indexes["worker-cpu"] == "cpu", indexes
    assert images["worker-gpu"] not in (images["api"], images["worker-cpu"]), "the GPU build needs its own image tag"
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert any("gpu" in device["capabilities"] for device in devices), "worker-gpu must reserve a GPU"


def _dockerignore_excludes(patterns: list[str], path: str) -> bool:
    """Docker's rule: the last matching pattern decides (`!` re-includes), and excluding a folder excludes
    everything under it."""
    def matches(pattern: str, candidate: str) -> bool:
        regex = "".join(
            "(.*/)?" if part == "**/" else ".*" if part == "**" else "[^/]*" if part == "*" else
            "[^/]" if part == "?" else re.escape(part)
            for part in re.split(r"(\*\*/|\*\*|\*|\?)", pattern.strip("/")))
        return re.fullmatch(regex, candidate) is not None

    parts = path.split("/")
    prefixes = ["/".join(parts[:count]) for count in range(1, len(parts) + 1)]
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if any(matches(pattern.removeprefix("!"), prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


def test_the_build_context_carries_what_the_dockerfile_copies_and_no_local_state():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    copied = [source for stage in parse_dockerfile(ROOT / "Dockerfile") for instruction in stage.all("COPY")
              if "from" not in instruction.flags for source in instruction.args[:-1]]
    needed = subprocess.run(["git", "ls-files", "--", *copied], capture_output=True, text=True, cwd=ROOT,
                            check=True).stdout.split()
    assert "frontend/package-lock.json" in needed and "backend/tunelab/main.py" in needed
    assert [path for path in needed if _dockerignore_excludes(patterns, path)] == []
    local_state = [".env", ".venv/bin/python", "frontend/node_modules/vite/package.json", "frontend/dist/index.html",
                   "var/tunelab.db", ".git/HEAD", "backend/tunelab/__pycache__/main.cpython-311.pyc"]
    assert [path for path in local_state if not _dockerignore_excludes(patterns, path)] == []
