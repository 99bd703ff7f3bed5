"""Torch, transformers and PEFT imported once, one thread at a time: transformers' lazy module raises ImportError
("cannot import name 'AutoModelForCausalLM'") to a thread that reaches it while another is still importing it. The
API estimates and validates launches in several threads, and an inference worker imports on a thread of its own
while a playground request loads a model on another."""

import functools
import threading

_IMPORT_LOCK = threading.Lock()


@functools.cache
def import_libraries() -> None:
    # A second caller before the first has finished finds no cached result and waits on the lock.
    with _IMPORT_LOCK:
        import peft  # noqa: F401
        import torch  # noqa: F401
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: F401
        from transformers.pytorch_utils import Conv1D  # noqa: F401
