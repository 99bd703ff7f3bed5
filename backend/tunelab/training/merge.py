"""A merged model from a run's adapter: the base with the adapter's weights folded in (PEFT's `merge_and_unload`),
saved in Hugging Face format with the run's tokenizer, so that `AutoModelForCausalLM.from_pretrained` (a reward
model's: `AutoModelForSequenceClassification`) loads it with no PEFT at all and computes what base + adapter computes.

`python -m tunelab.training.merge ADAPTER_DIR TOKENIZER_DIR OUTPUT_DIR` runs it in a process of its own, as the
worker does: the worker stays free of torch, and the memory of a whole model goes with the process."""

import argparse
import logging
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from tunelab.training.registry import ModelHead
from tunelab.training.sink import StartingWeights

logger = logging.getLogger("tunelab.training")

def merge_adapter(adapter_dir: Path, tokenizer_dir: Path, output_dir: Path, base: str | None = None,
                  start_from: Sequence[StartingWeights] = (), head: ModelHead = "causal_lm") -> None:
    """Write base + adapter merged into `output_dir` (float32, as runs train), replacing what was there at once. A run
    that started from other runs' weights trained its adapter on the base with those applied (`base`, `start_from`):
    it merges into that model, not into the bare base its adapter_config names."""
    import torch
    from peft import AutoPeftModelForCausalLM, AutoPeftModelForSequenceClassification, PeftModel
    from transformers import AutoTokenizer

    from tunelab.training.models import load_starting_model

    if start_from or base is not None:
        # The base as the worker has it: an adapter names its base by model id, which need not be a path here.
        assert base is not None, "a run that started from another's weights names its base"
        starting, _ = load_starting_model(base, start_from, head=head)
        model = PeftModel.from_pretrained(starting, str(adapter_dir))
    elif head == "causal_lm":
        # The base is the one the adapter records (a GGUF base's Hugging Face copy included), as a user would load it.
        model = AutoPeftModelForCausalLM.from_pretrained(str(adapter_dir), dtype=torch.float32)
    else:
        # A reward model's adapter holds its score head (one output) beside the adapter's weights.
        model = AutoPeftModelForSequenceClassification.from_pretrained(str(adapter_dir), dtype=torch.float32,
                                                                       num_labels=1)
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
    parser.add_argument("--base", help="the base model, for a run that started from other runs' weights")
    parser.add_argument("--start-from", action="append", default=[], metavar="KIND=PATH",
                        help="weights applied on the base first, in order: adapter=DIR (merged) or model=DIR")
    parser.add_argument("--head", choices=("causal_lm", "sequence_classification"), default="causal_lm",
                        help="the model the adapter belongs to: a causal LM, or a reward model's sequence classifier")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    start_from = []
    for item in args.start_from:
        kind, _, path = item.partition("=")
        if kind not in ("adapter", "model") or not path:
            parser.error(f"--start-from takes adapter=DIR or model=DIR, not {item!r}")
        start_from.append(StartingWeights(kind=kind, path=Path(path)))
    merge_adapter(args.adapter_dir, args.tokenizer_dir, args.output_dir, args.base, start_from, args.head)


if __name__ == "__main__":
    main()
