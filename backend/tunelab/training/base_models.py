"""A Hugging Face copy of a GGUF base model, made once beside the GGUF and trained from ever after.

A GGUF holds quantized blocks that training cannot use; transformers dequantizes them at every load (SmolLM2-135M:
14 s), and an adapter trained on such a model records the GGUF's folder as its base, which no Hugging Face loader
reads (`AutoPeftModelForCausalLM.from_pretrained(adapter)` fails: the folder has no config.json). So the first run
on a GGUF writes the dequantized weights (float32, as they are trained), config and tokenizer as an ordinary
Hugging Face folder,

    <the GGUF's folder>/hf/<GGUF stem>-<first 16 hex digits of its sha256>/

and every run loads the model from there. An adapter then records that folder as `base_model_name_or_path`, and
`AutoPeftModelForCausalLM.from_pretrained(adapter_dir)` loads base and adapter with nothing but transformers and
PEFT, as it does for any adapter of a Hugging Face model. The folder is named by the GGUF's content, so it never
changes under an adapter that names it: a different GGUF of the same name gets a folder of its own. It appears
whole or not at all (written under a temporary name, then renamed), so a crash leaves no half-written base and two
workers making it at once both end up with the same one.
"""

import hashlib
import logging
import os
import shutil
import uuid
from functools import lru_cache
from pathlib import Path

logger = logging.getLogger("tunelab.training")

HF_BASES_DIR = "hf"  # beside the GGUF: the Hugging Face copies of the GGUFs of that folder
DIGEST_CHARS = 16


@lru_cache(maxsize=8)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime too, so a file replaced in place is hashed again; one training process asks twice
    # (the run's model identity, then the load), and hashes once.
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def gguf_sha256(gguf: Path) -> str:
    stat = gguf.stat()
    return _sha256(gguf.resolve(), stat.st_size, stat.st_mtime_ns)


def hf_base_dir(gguf: Path) -> Path:
    """Where the Hugging Face copy of `gguf` is (or will be)."""
    return gguf.parent / HF_BASES_DIR / f"{gguf.stem}-{gguf_sha256(gguf)[:DIGEST_CHARS]}"


def gguf_identity(gguf: Path) -> dict[str, object]:
    """What identifies a GGUF base: its file, size and sha256, and the Hugging Face folder its adapters record."""
    return {"gguf_file": gguf.name, "gguf_size_bytes": gguf.stat().st_size, "gguf_sha256": gguf_sha256(gguf),
            "hf_base_path": str(hf_base_dir(gguf))}


def ensure_hf_base(gguf: Path) -> Path:
    """The Hugging Face copy of `gguf`, written now if this is the first run on it."""
    target = hf_base_dir(gguf)
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    logger.info("writing a Hugging Face copy of %s to %s (once; later runs load it from there)", gguf.name, target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"cannot write the Hugging Face copy of {gguf.name} beside it ({exc}); the worker trains a "
                      f"GGUF from that copy, so {gguf.parent} must be writable for it") from exc
    partial = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
    try:
        source = str(gguf.parent)
        tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=gguf.name)
        # dequantize=True: training needs dense weights; the quantized GGUF blocks are not trainable.
        model = AutoModelForCausalLM.from_pretrained(source, gguf_file=gguf.name,
                                                     quantization_config=GgufConfig(dequantize=True),
                                                     dtype=torch.float32)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        del model
        try:
            os.rename(partial, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
            logger.info("%s was written meanwhile by another process; using that one", target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target
