"""Where a run's checkpoints live and which one a resume starts from. The trainer (transformers) writes them:
model or adapter, optimizer, scheduler, RNG states and trainer state, which holds the data position."""

import json
from pathlib import Path

CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_PREFIX = "checkpoint-"  # transformers' PREFIX_CHECKPOINT_DIR, and the step
# Written into each checkpoint by Tunelab: what TRL keeps only in memory (its running count of training tokens).
CHECKPOINT_EXTRAS = "tunelab_state.json"


def latest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint under `folder`: the trainer writes trainer_state.json last, so a checkpoint
    interrupted while saving (the process killed mid-write) is passed over for the one before it."""
    found = []
    for candidate in folder.glob(f"{CHECKPOINT_PREFIX}*") if folder.is_dir() else ():
        step = candidate.name.removeprefix(CHECKPOINT_PREFIX)
        if step.isdigit() and (candidate / "trainer_state.json").is_file():
            found.append((int(step), candidate))
    return max(found)[1] if found else None


def checkpoint_tokens_seen(checkpoint: Path) -> int:
    """Training tokens seen up to the checkpoint: Tunelab's record of it, else the last one the trainer logged."""
    extras = checkpoint / CHECKPOINT_EXTRAS
    if extras.is_file():
        return int(json.loads(extras.read_text(encoding="utf-8"))["num_tokens"])
    history = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8")).get("log_history", [])
    return int(max((e["num_tokens"] for e in history if "num_tokens" in e), default=0))
