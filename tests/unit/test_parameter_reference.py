"""docs/parameters.md is rendered from the training registry: a parameter added, renamed or given another default or
bound without `make docs` fails here, so the reference cannot drift from what the API accepts."""

from pathlib import Path

from tunelab.training import registry
from tunelab.training.reference import render

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "parameters.md"


def test_the_committed_reference_is_what_the_registry_renders():
    assert REFERENCE.read_text(encoding="utf-8") == render(), "docs/parameters.md is stale: run `make docs`"


def test_every_method_objective_and_parameter_is_in_it_with_its_default_and_bounds():
    text = render()
    for method in registry.list_methods():
        assert f"## Method `{method.name}`" in text
        for name in method.params_model.model_fields:
            assert f"| `{name}` |" in text, name
    for objective in registry.list_objectives():
        assert f"## Objective `{objective.name}`" in text
        for name in objective.params_model.model_fields:
            assert f"| `{name}` |" in text, name
    # A row as the launch form would say it: LoRA's rank, its default and its bounds.
    lora = registry.get_method("lora").params_model.model_fields["r"]
    row = next(line for line in text.splitlines() if line.startswith("| `r` |"))
    assert f"| `{lora.default}` |" in row and "≥ 1" in row
