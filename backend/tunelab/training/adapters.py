"""What the engine and the generation need to know of a PEFT adapter beyond its method's spec. Light: reads the
adapter's config, imports nothing."""

from typing import Any


def initialised_from_the_base(peft_config: Any) -> bool:
    """Whether the adapter started as a part of the base's own weights that it took out of them (PiSSA): with it
    switched off the model is the rest of the base, not the base, and the adapter as trained applies to no model a
    user has (it is saved converted to a plain LoRA)."""
    init = getattr(peft_config, "init_lora_weights", None)
    return isinstance(init, str) and init.lower().startswith(("pissa", "olora", "corda"))
