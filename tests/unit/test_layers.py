"""Response models live in schemas/, not in route files (7 did: health, methods, models), and schemas import no
service: a route reads as what it answers, and a schema can be read without the logic behind it."""

import ast
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[2] / "backend" / "tunelab"


def _classes_extending(path: Path, base: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == base for b in node.bases)]


def test_route_files_define_no_response_models():
    found = {path.name: names for path in (BACKEND / "api" / "routes").glob("*.py")
             if (names := _classes_extending(path, "BaseModel"))}
    assert found == {}
