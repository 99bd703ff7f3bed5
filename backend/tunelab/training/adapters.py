"""What the engine and the generation need to know of a PEFT adapter beyond its method's spec. Light: reads the
adapter's config, imports nothing."""

import json
from pathlib import Path
from typing import Any


def initialised_from_the_base(peft_config: Any) -> bool:
    """Whether the adapter started as a part of the base's own weights that it took out of them (PiSSA): with it
    switched off the model is the rest of the base, not the base, and the adapter as trained applies to no model a
    user has (it is saved converted to a plain LoRA)."""
    init = getattr(peft_config, "init_lora_weights", None)
    return isinstance(init, str) and init.lower().startswith(("pissa", "olora", "corda"))


def name_base_by_id(adapter_dir: Path, model_id: str, revision: str | None = None) -> None:
    """Record the adapter's base as the model id the run was launched with (a hub id, a catalog name), with its hub
    revision when known, instead of the folder the worker loaded it from: that path means nothing on another machine,
    where `PeftModel.from_pretrained(base, adapter)` takes the user's copy of the base and `AutoPeftModel…` resolves
    the id (from the hub cache, say)."""
    config_file = adapter_dir / "adapter_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = model_id
    if revision:
        config["revision"] = revision
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
