"""The processes of a multi-process run (torchrun: one rank each, DDP or DeepSpeed): which one speaks for the run,
and the few decisions they must take together. Rank 0 reports to the run's sink and writes the run's files; every
rank trains."""

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def process_rank() -> int:
    """This process's rank among the run's processes (torchrun's RANK); 0 for a run of one process."""
    return int(os.environ.get("RANK", "0"))


def process_count() -> int:
    """The run's number of processes (torchrun's WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return process_rank() == 0


def _group_started() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def any_process(flag: bool, device: "torch.device | str") -> bool:
    """True on every process when `flag` is True on any of them. Every process calls it at the same point (a
    collective): one all-reduce of one number, cheap enough for every step."""
    if not _group_started():
        return flag
    import torch
    import torch.distributed as dist

    vote = torch.tensor([int(flag)], device=device)
    dist.all_reduce(vote, op=dist.ReduceOp.MAX)
    return bool(vote.item())


def wait_for_every_process() -> None:
    """Return once every process has got here (a barrier); at once for a run of one process."""
    if _group_started():
        import torch.distributed as dist

        dist.barrier()
