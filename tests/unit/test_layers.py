"""The backend's layers, as docs/contributing.md draws them: `api → services → db`, `worker → services → training`,
everything → `core`. Response models live in schemas/, not in route files (7 did: health, methods, models), and
schemas import no service (schemas/metrics did): a route reads as what it answers, and a schema can be read without
the logic behind it. services/ is grouped by domain, and worker-side code lives under worker/."""

import ast
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "tunelab"

# What each layer must not import (a module or any of its submodules).
FORBIDDEN_IMPORTS = {
    "services": ("tunelab.api", "tunelab.worker", "fastapi", "starlette", "celery"),
    "training": ("tunelab.api", "tunelab.services", "tunelab.db", "tunelab.worker"),
    "db": ("tunelab.api", "tunelab.services", "tunelab.worker", "tunelab.training"),
    "schemas": ("tunelab.api", "tunelab.services", "tunelab.worker"),
    "core": ("tunelab.api", "tunelab.services", "tunelab.worker", "tunelab.db", "tunelab.training", "tunelab.schemas"),
}
# services/: one package per domain, and the helpers every domain shares.
SERVICE_DOMAINS = {"accounts", "catalog", "evaluation", "live", "metrics", "runs"}
SHARED_SERVICE_MODULES = {"__init__.py", "paging.py"}


def _classes_extending(path: Path, base: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == base for b in node.bases)]


def _imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return modules


def test_route_files_define_no_response_models():
    found = {path.name: names for path in (BACKEND / "api" / "routes").glob("*.py")
             if (names := _classes_extending(path, "BaseModel"))}
    assert found == {}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_IMPORTS))
def test_a_layer_imports_nothing_above_it(layer):
    forbidden = FORBIDDEN_IMPORTS[layer]
    found = sorted(f"{path.relative_to(BACKEND)} imports {module}"
                   for path in (BACKEND / layer).rglob("*.py") for module in _imported_modules(path)
                   if any(module == name or module.startswith(name + ".") for name in forbidden))
    assert found == []


def test_services_are_grouped_by_domain_and_worker_code_is_under_worker():
    services = BACKEND / "services"
    packages = {path.name for path in services.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    loose = {path.name for path in services.glob("*.py")} - SHARED_SERVICE_MODULES
    assert (packages, loose) == (SERVICE_DOMAINS, set())
    assert all((services / domain / "__init__.py").read_text(encoding="utf-8").startswith('"""')
               for domain in SERVICE_DOMAINS), "each domain says what it holds"
    # The training process's side of a run (execution) and the worker's supervisor of it are the worker's.
    assert {"execution.py", "supervisor.py"} <= {path.name for path in (BACKEND / "worker").glob("*.py")}
