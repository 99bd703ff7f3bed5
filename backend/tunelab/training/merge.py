"""A merged model from a run's adapter: the base with the adapter's weights folded in (PEFT's `merge_and_unload`),
saved in Hugging Face format with the run's tokenizer, so that `AutoModelForCausalLM.from_pretrained` loads it with
no PEFT at all and computes what base + adapter computes.

`python -m tunelab.training.merge ADAPTER_DIR TOKENIZER_DIR OUTPUT_DIR` runs it in a process of its own, as the
worker does: the worker stays free of torch, and the memory of a whole model goes with the process."""

import argparse
import logging
import os
import shutil
import uuid
from pathlib import Path

logger = logging.getLogger("tunelab.training")

# PEFT methods whose adapter is a change of the base's weights, which can be folded into them. Prompt-learning
# adapters (prompt, prefix, P-tuning) add virtual tokens instead: there is nothing to merge.
MERGEABLE_PEFT_TYPES = frozenset({"LORA", "IA3"})


def merge_adapter(adapter_dir: Path, tokenizer_dir: Path, output_dir: Path) -> None:
    """Write base + adapter merged into `output_dir` (float32, as runs train), replacing what was there at once."""
    import torch
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    # The base is the one the adapter records (a GGUF base's Hugging Face copy included), as a user would load it.
    model = AutoPeftModelForCausalLM.from_pretrained(str(adapter_dir), dtype=torch.float32)
    merged = model.merge_and_unload(safe_merge=True)
    partial = output_dir.parent / f".{output_dir.name}.partial-{uuid.uuid4().hex[:8]}"
    replaced = output_dir.parent / f".{output_dir.name}.replaced-{uuid.uuid4().hex[:8]}"
    try:
        merged.save_pretrained(partial)
        AutoTokenizer.from_pretrained(str(tokenizer_dir)).save_pretrained(partial)
        if output_dir.exists():
            os.rename(output_dir, replaced)
        os.rename(partial, output_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
    logger.info("merged %s into its base: %s", adapter_dir, output_dir)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tunelab.training.merge", description=merge_adapter.__doc__)
    for name in ("adapter_dir", "tokenizer_dir", "output_dir"):
        parser.add_argument(name, type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    merge_adapter(args.adapter_dir, args.tokenizer_dir, args.output_dir)


if __name__ == "__main__":
    main()
