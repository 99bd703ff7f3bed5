from typing import TYPE_CHECKING, Any

__version__ = '0.1.0'

if TYPE_CHECKING:
    from tunelab.client.run import Run, init


def __getattr__(name: str) -> Any:
    # `tunelab.init` for SDK users, loaded on first use: the server and the worker import `tunelab` too and need none
    # of it.
    if name in ("init", "Run"):
        from tunelab.client import run

        return getattr(run, name)
    raise AttributeError(f"module 'tunelab' has no attribute {name!r}")


__all__ = ["Run", "__version__", "init"]
