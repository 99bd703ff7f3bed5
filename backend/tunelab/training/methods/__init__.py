"""One module per training method; each registers itself. Adding a method is adding a module and a line here."""

from tunelab.training.methods import full, lora, prefix, prompt, ptuning, ia3  # noqa: F401
