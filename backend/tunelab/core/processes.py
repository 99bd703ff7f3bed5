"""Child processes that must not outlive the process that started them."""

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """For `preexec_fn`: the child gets `sig` when its parent dies (Linux), so no orphan keeps training or
    serving. Where the OS has no such call the child checks its parent itself."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    except OSError:
        pass
