"""Adding a method or an objective touches only the files docs/contributing.md's checklist names: its own module
(and its tests and docs). So no other code decides anything by a method's or an objective's name: what differs
between them is a field of their spec (packs_rows, eval_loss, next_stage, mergeable, tiny_model_defaults …), which
the registry checks and GET /methods publishes. Before, the estimator compared `objective.name == "pretrain"`, the
engine `objective in ("sft", "pretrain")`, and the launch page kept its own table of next stages."""

import ast
import re
from pathlib import Path

from tunelab.schemas.common import DEFAULT_OBJECTIVE
from tunelab.training import registry

ROOT = Path(__file__).resolve().parents[2]
BACKEND = ROOT / "backend" / "tunelab"
# Where a method's or an objective's own name belongs.
OWN_MODULES = (BACKEND / "training" / "methods", BACKEND / "training" / "objectives")
FRONTEND = ROOT / "frontend" / "src"


def _registered_names() -> set[str]:
    return {spec.name for spec in registry.list_methods()} | {spec.name for spec in registry.list_objectives()}


def _named(node: ast.expr, names: set[str]) -> list[str]:
    """The registered names a comparison operand spells out: a string, or a tuple, list or set of them."""
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in names]


def _decisions_by_name(path: Path, names: set[str]) -> list[str]:
    """Comparisons of a method or objective (an operand whose code says so) with a registered name, and dict literals
    keyed by registered names only (a side table)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                spelled = _named(operand, names)
                others = " ".join(ast.unparse(o) for o in operands if o is not operand)
                if spelled and re.search(r"method|objective", others):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} compares {others} with {spelled}")
        elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if all(isinstance(k, str) and k in names for k in keys):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} is a table keyed by {keys}")
    return found


def test_the_registry_declares_what_other_code_asks_of_a_method_or_an_objective():
    names = _registered_names()
    found = [finding for path in sorted(BACKEND.rglob("*.py"))
             if not any(path.is_relative_to(own) for own in OWN_MODULES)
             for finding in _decisions_by_name(path, names)]
    assert found == []


def test_the_frontend_names_no_method_or_objective():
    """The pages learn every method and objective from GET /methods: a name in the page's code is a decision taken
    without the registry (tests and the generated client aside)."""
    alternatives = "|".join(sorted(_registered_names()))
    # A name in quotes on a line about methods or objectives ("prompt" is also the playground's prompt), or a name
    # keying an object (a side table such as { pretrain: "sft", sft: "dpo" }).
    quoted = re.compile(r"""(["'`])(%s)\1""" % alternatives)
    about_them = re.compile(r"method|objective", re.IGNORECASE)
    table_key = re.compile(r"""\b(%s)\s*:\s*["'`{\[]""" % alternatives)
    found = []
    for path in sorted(FRONTEND.rglob("*.ts*")):
        if ".test." in path.name or path.is_relative_to(FRONTEND / "client") or path.is_relative_to(FRONTEND / "test"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("//", "*", "/*")):
                continue
            if (quoted.search(line) and about_them.search(line)) or table_key.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_a_declared_stage_and_the_default_objective_are_registered_objectives():
    objectives = {spec.name for spec in registry.list_objectives()}
    assert DEFAULT_OBJECTIVE in objectives
    stages = {spec.name: spec.next_stage for spec in registry.list_objectives() if spec.next_stage is not None}
    assert stages and set(stages.values()) <= objectives
