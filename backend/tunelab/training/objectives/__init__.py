"""One module per training objective; each registers itself. Adding an objective is adding a module and a line here."""

# The import order is the order objectives are listed in (API and launch form).
from tunelab.training.objectives import sft, pretrain, dpo, orpo, simpo, kto, reward, grpo, rloo  # noqa: F401, I001
