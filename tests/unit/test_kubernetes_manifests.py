"""The Kubernetes manifests (deploy/kubernetes), rendered by `kubectl kustomize` as `kubectl apply -k` would apply them,
validated against the Kubernetes 1.31 schemas (kubernetes-validate ships them: offline) and held to the invariants a
deployment relies on. KEDA's kinds have no built-in schema; their required fields are checked here by hand."""

import functools
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from tests.conftest import IN_CI
from tunelab.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE = ROOT / "deploy" / "kubernetes"
BUILDS = ["base", "overlays/trial", "overlays/production"]
KUBERNETES_VERSION = "1.31.0"
CUSTOM_API_GROUPS = ("keda.sh/",)
WORKLOADS = ("Deployment", "StatefulSet", "Job")
TUNELAB_IMAGES = ("tunelab", "tunelab-gpu")
HEALTH = "/api/v1/health"

if shutil.which("kubectl") is None:
    WHY = "kubectl is not installed: it renders the Kustomize manifests (`kubectl kustomize`)"
    if IN_CI:
        pytest.fail(f"{WHY}; CI has it", pytrace=False)
    pytest.skip(WHY, allow_module_level=True)


@functools.cache
def render(build: str) -> tuple[str, list[dict]]:
    """The build's rendered YAML and its objects."""
    result = subprocess.run(["kubectl", "kustomize", str(KUSTOMIZE / build)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout, [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def objects(build: str, kind: str) -> list[dict]:
    return [obj for obj in render(build)[1] if obj["kind"] == kind]


def named(build: str, kind: str, name: str) -> dict | None:
    return next((obj for obj in objects(build, kind) if obj["metadata"]["name"] == name), None)


def pod_specs(build: str) -> list[tuple[str, dict]]:
    return [(obj["metadata"]["name"], obj["spec"]["template"]["spec"])
            for kind in WORKLOADS for obj in objects(build, kind)]


def tunelab_containers(build: str) -> list[tuple[dict, dict]]:
    """(workload, container) for every container that runs a Tunelab image."""
    return [(obj, container) for kind in WORKLOADS for obj in objects(build, kind)
            for container in obj["spec"]["template"]["spec"]["containers"]
            if container["image"].split(":")[0] in TUNELAB_IMAGES]


def config(build: str) -> dict[str, str]:
    (config_map,) = [obj for obj in objects(build, "ConfigMap") if obj["metadata"]["name"].startswith("tunelab-config")]
    return config_map["data"]


def secret_values(build: str, name: str = "tunelab-secrets") -> dict[str, str]:
    secret = named(build, "Secret", name)
    assert secret is not None, f"{build}: no Secret {name}"
    assert "data" not in secret, f"{build}: {name} carries base64 data; its placeholders belong in stringData"
    return secret["stringData"]


def queues_of(container: dict) -> list[str] | None:
    """The queues a `tunelab worker --queues …` container consumes; None for any other command."""
    words = container.get("command", []) + container.get("args", [])
    if len(words) == 1 or (words[:2] == ["sh", "-c"]):
        words = shlex.split(words[-1])
    if words[:2] != ["tunelab", "worker"]:
        return None
    assert "--queues" in words, f"{container['name']}: a worker must name its queues (the image's default is cpu)"
    return words[words.index("--queues") + 1].split(",")


def workers(build: str) -> dict[str, tuple[dict, list[str]]]:
    """Each worker Deployment by name, with its queues."""
    found = {}
    for deployment in objects(build, "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            queues = queues_of(container)
            if queues is not None:
                found[deployment["metadata"]["name"]] = (deployment, queues)
    return found


def training_workers(build: str) -> dict[str, tuple[dict, list[str]]]:
    infer = config(build)["TUNELAB_INFER_QUEUE"]
    return {name: found for name, found in workers(build).items() if infer not in found[1]}


@pytest.mark.parametrize("build", BUILDS)
def test_every_object_is_valid_for_kubernetes(build):
    for obj in render(build)[1]:
        if obj["apiVersion"].startswith(CUSTOM_API_GROUPS):
            continue  # custom resources: no built-in schema; test_keda_scales_each_worker_on_its_queue checks them
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{build}: {obj['kind']} {obj['metadata']['name']}: {exc.message} at "
                        f"{'.'.join(map(str, exc.path))}")


@pytest.mark.parametrize("build", BUILDS)
def test_every_container_has_resources_and_runs_unprivileged(build):
    specs = pod_specs(build)
    assert specs
    for name, spec in specs:
        pod_security = spec.get("securityContext", {})
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{build}: {name}/{container['name']}"
            resources = container.get("resources", {})
            assert {"cpu", "memory"} <= resources.get("requests", {}).keys(), f"{where}: no cpu and memory requests"
            assert "memory" in resources.get("limits", {}), f"{where}: no memory limit"
            security = container.get("securityContext")
            assert security, f"{where}: no securityContext"
            assert security.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation allowed"
            assert security.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: capabilities kept"
            assert security.get("runAsNonRoot", pod_security.get("runAsNonRoot")) is True, f"{where}: may run as root"
            assert security.get("readOnlyRootFilesystem") is True, f"{where}: writable root filesystem"


@pytest.mark.parametrize("build", BUILDS)
def test_tunelab_containers_write_only_to_mounted_volumes(build):
    """The root filesystem is read-only: the data dir and HOME (caches), /tmp, must be volumes."""
    for workload, container in tunelab_containers(build):
        mounts = {mount["mountPath"] for mount in container.get("volumeMounts", [])}
        settings = config(build)
        assert {settings["TUNELAB_DATA_DIR"], settings["HOME"], "/tmp"} <= mounts, workload["metadata"]["name"]


@pytest.mark.parametrize("build", BUILDS)
def test_api_is_probed_on_its_health_route(build):
    api = named(build, "Deployment", "tunelab-api")
    (container,) = api["spec"]["template"]["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert f"--port {ports['http']}" in " ".join(container["command"])
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == HEALTH, probe
        assert container[probe]["httpGet"]["port"] in ("http", ports["http"]), probe
    liveness = container["livenessProbe"]
    # /health is 503 while the database or Redis is down; a restart does not cure that, so liveness waits longer.
    assert liveness["periodSeconds"] * liveness["failureThreshold"] >= 60


@pytest.mark.parametrize("build", BUILDS)
def test_worker_queues_are_the_declared_queues(build):
    settings = config(build)
    declared = settings["TUNELAB_RUN_QUEUES"].split(",")
    infer = settings["TUNELAB_INFER_QUEUE"]
    assert settings["TUNELAB_DEFAULT_QUEUE"] in declared
    training = [queue for _, queues in training_workers(build).values() for queue in queues]
    assert sorted(training) == sorted(declared), "one worker Deployment per declared training queue, and no other"
    inference = [queues for name, (_, queues) in workers(build).items() if name not in training_workers(build)]
    assert inference == [[infer]], "one inference worker, on the inference queue alone"


@pytest.mark.parametrize("build", BUILDS)
def test_training_workers_have_time_to_checkpoint_on_sigterm(build):
    trainers = training_workers(build)
    assert trainers
    for name, (deployment, _) in trainers.items():
        assert deployment["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30) >= 300, name


@pytest.mark.parametrize("build", ["base", "overlays/production"])
def test_gpu_worker_gets_a_gpu_node(build):
    deployment, queues = workers(build)["tunelab-worker-gpu"]
    assert queues == ["gpu"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == 1
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert spec["nodeSelector"], "no nodeSelector: the pod may wait on a node without GPUs"
    assert any(toleration["key"] == "nvidia.com/gpu" for toleration in spec["tolerations"])
    assert container["image"].startswith("tunelab-gpu:"), "the GPU worker needs PyTorch's CUDA build"
    assert spec["terminationGracePeriodSeconds"] >= 600


@pytest.mark.parametrize("build", BUILDS)
def test_every_reference_names_an_object_and_key_that_exist(build):
    config_maps = {obj["metadata"]["name"]: obj.get("data", {}) for obj in objects(build, "ConfigMap")}
    secrets = {obj["metadata"]["name"]: obj.get("stringData", {}) | obj.get("data", {})
               for obj in objects(build, "Secret")}
    claims = {obj["metadata"]["name"] for obj in objects(build, "PersistentVolumeClaim")}
    checked = 0
    for name, spec in pod_specs(build):
        for container in spec.get("initContainers", []) + spec["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps, (name, source)
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets, (name, source)
            for env in container.get("env", []):
                for ref_kind, found in (("configMapKeyRef", config_maps), ("secretKeyRef", secrets)):
                    ref = env.get("valueFrom", {}).get(ref_kind)
                    if ref:
                        checked += 1
                        assert ref["key"] in found.get(ref["name"], {}), f"{build}: {name} {env['name']}: {ref}"
        for volume in spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, (name, volume)
    assert checked


@pytest.mark.parametrize("build", BUILDS)
def test_services_and_disruption_budgets_select_pods(build):
    pod_labels = [(obj["metadata"]["name"], obj["spec"]["template"]["metadata"]["labels"])
                  for kind in WORKLOADS for obj in objects(build, kind)]

    def selected(selector: dict) -> list[str]:
        return [name for name, labels in pod_labels if selector.items() <= labels.items()]

    for service in objects(build, "Service"):
        assert selected(service["spec"]["selector"]), f"Service {service['metadata']['name']} selects no pods"
    budgets = {budget["metadata"]["name"]: selected(budget["spec"]["selector"]["matchLabels"])
               for budget in objects(build, "PodDisruptionBudget")}
    assert all(budgets.values()), budgets
    covered = {name for names in budgets.values() for name in names}
    assert {"tunelab-api", *workers(build)} <= covered, "every API and worker pod is covered by a disruption budget"
    api_budget = named(build, "PodDisruptionBudget", "tunelab-api")["spec"]
    assert api_budget["minAvailable"] >= 1
    # minAvailable equal to the replicas would block every node drain.
    assert named(build, "Deployment", "tunelab-api")["spec"]["replicas"] > api_budget["minAvailable"]
    for ingress in objects(build, "Ingress"):
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                service = named(build, "Service", backend["name"])
                assert service, backend
                assert backend["port"].get("name") in {port["name"] for port in service["spec"]["ports"]}


@pytest.mark.parametrize("build", BUILDS)
def test_the_schema_job_migrates(build):
    job = named(build, "Job", "tunelab-migrate")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    command = " ".join(container["command"])
    assert "tunelab migrate" in command
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


@pytest.mark.parametrize("build", BUILDS)
def test_settings_of_every_tunelab_container_start_the_app(build, monkeypatch):
    """Each container's environment (ConfigMap, literals, Secret) as Settings reads it: accepted, except that the
    placeholder secret key is refused in production until it is replaced."""
    for key in list(os.environ):
        if key.startswith("TUNELAB_"):
            monkeypatch.delenv(key)
    config_maps = {obj["metadata"]["name"]: obj.get("data", {}) for obj in objects(build, "ConfigMap")}
    secrets = {obj["metadata"]["name"]: obj.get("stringData", {}) for obj in objects(build, "Secret")}
    for workload, container in tunelab_containers(build):
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            env |= config_maps[source["configMapRef"]["name"]]
        for item in container.get("env", []):
            ref = item.get("valueFrom", {}).get("secretKeyRef")
            env[item["name"]] = secrets[ref["name"]][ref["key"]] if ref else item["value"]
        fields = {key.removeprefix("TUNELAB_").lower(): value for key, value in env.items()
                  if key.startswith("TUNELAB_") and key.removeprefix("TUNELAB_").lower() in Settings.model_fields}
        where = f"{build}: {workload['metadata']['name']}"
        assert fields["environment"] == "production", where
        if build == "overlays/trial":
            Settings(_env_file=None, **fields)
            continue
        with pytest.raises(ValidationError, match="TUNELAB_SECRET_KEY"):
            Settings(_env_file=None, **fields)
        Settings(_env_file=None, **(fields | {"secret_key": "0123456789abcdef" * 4}))


@pytest.mark.parametrize("build", BUILDS)
def test_images_have_override_points_and_pinned_tags(build):
    for kind in WORKLOADS:
        for obj in objects(build, kind):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                name, _, tag = container["image"].rpartition(":")
                assert name and tag, f"{obj['metadata']['name']}: image {container['image']} has no tag"
                if name not in TUNELAB_IMAGES:
                    assert tag != "latest", f"{obj['metadata']['name']}: third-party image {name} is not pinned"
    kustomization = yaml.safe_load((KUSTOMIZE / "base" / "kustomization.yaml").read_text())
    assert {image["name"] for image in kustomization["images"]} == set(TUNELAB_IMAGES)


def test_trial_wires_the_in_cluster_services():
    build = "overlays/trial"
    secrets = secret_values(build)
    database, redis = urlsplit(secrets["TUNELAB_DATABASE_URL"]), urlsplit(secrets["TUNELAB_REDIS_URL"])
    for url, kind in ((database, "StatefulSet"), (redis, "Deployment")):
        assert named(build, kind, url.hostname), f"nothing in the trial serves {url.hostname}"
        service = named(build, "Service", url.hostname)
        assert url.port in {port["port"] for port in service["spec"]["ports"]}
    assert database.password == secrets["POSTGRES_PASSWORD"]
    settings = config(build)
    assert settings["TUNELAB_ARTIFACT_URL"] == "s3://tunelab/artifacts"
    endpoint = urlsplit(settings["TUNELAB_S3_ENDPOINT_URL"])
    assert named(build, "StatefulSet", endpoint.hostname) and named(build, "Service", endpoint.hostname)
    bucket_job = named(build, "Job", "tunelab-minio-bucket")["spec"]["template"]["spec"]["containers"][0]
    assert bucket_job["args"][-1].endswith("/tunelab")
    for _, container in tunelab_containers(build):
        if container["name"] != "migrate":
            names = {item["name"] for item in container["env"]}
            assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= names, container["name"]


def test_keda_scales_each_worker_on_its_queue():
    build = "overlays/production"
    scaled = objects(build, "ScaledObject")
    authentications = {obj["metadata"]["name"]: obj for obj in objects(build, "TriggerAuthentication")}
    secrets = secret_values(build)
    redis_url = urlsplit(secrets["TUNELAB_REDIS_URL"])
    by_target = {}
    for obj in scaled + list(authentications.values()):
        assert obj["apiVersion"] == "keda.sh/v1alpha1"
    for auth in authentications.values():
        for ref in auth["spec"]["secretTargetRef"]:
            assert ref["key"] in secret_values(build, ref["name"]), ref
    assert secrets["KEDA_REDIS_ADDRESS"] == redis_url.netloc.rpartition("@")[2], "KEDA watches another Redis"
    for obj in scaled:
        spec = obj["spec"]
        target = spec["scaleTargetRef"]
        assert target.get("kind", "Deployment") == "Deployment"
        assert target["name"] in workers(build), f"{obj['metadata']['name']} scales no worker Deployment"
        by_target[target["name"]] = spec
        (queue,) = workers(build)[target["name"]][1]
        redis_triggers = [trigger for trigger in spec["triggers"] if trigger["type"] == "redis"]
        assert [trigger["metadata"]["listName"] for trigger in redis_triggers] == [queue]
        assert redis_triggers[0]["metadata"]["databaseIndex"] == (redis_url.path.strip("/") or "0")
        for trigger in spec["triggers"]:
            assert trigger["type"] in ("redis", "postgresql"), trigger
            assert trigger["authenticationRef"]["name"] in authentications, trigger
            if trigger["type"] == "postgresql":
                assert f"queue = '{queue}'" in trigger["metadata"]["query"]
        if target["name"] in training_workers(build):
            # Without it, a queue whose runs are all training reads empty and KEDA stops their workers mid-run.
            assert any(trigger["type"] == "postgresql" for trigger in spec["triggers"]), target["name"]
    assert set(by_target) == set(workers(build)), "every worker Deployment is scaled, once"
    assert by_target["tunelab-worker-gpu"]["minReplicaCount"] == 0
    assert by_target["tunelab-worker-infer"]["minReplicaCount"] >= 1


@pytest.mark.parametrize("build", BUILDS)
def test_nothing_names_a_path_of_this_machine(build):
    text = render(build)[0]
    # The checkout and the home directory; not their parents, which may be as common as /tmp (a clone in CI), a
    # folder the manifests rightly name (HOME=/tmp in the containers).
    for path in {str(ROOT), str(Path.home())} - {"/", "/tmp", "/root"}:
        assert path not in text, f"{build} names {path}"
