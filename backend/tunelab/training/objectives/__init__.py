"""One module per training objective; each registers itself. Adding an objective is adding a module and a line here."""

from tunelab.training.objectives import sft  # noqa: F401
