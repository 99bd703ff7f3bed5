"""One module per training method; each registers itself. Adding a method is adding a module and a line here."""

# The import order is the order methods are listed in (API and launch form): from full to the lightest.
from tunelab.training.methods import (  # noqa: F401, I001
    full, freeze, lora, dora, qlora, oft, prefix, prompt, ptuning, ia3,
)
