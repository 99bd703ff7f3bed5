#!/usr/bin/env bash
# On a CUDA machine: bf16 LoRA, QLoRA, DoRA and DPO a few steps each on SmolLM2, the estimate against CUDA peak, as a
# table. Needs the project installed with its qlora extra (`pip install -e '.[qlora]'`) and `make models` done.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
test -x "$PYTHON" || PYTHON=python3
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$PYTHON" -c "import bitsandbytes" 2>/dev/null || { echo "bitsandbytes is missing: pip install -e '.[qlora]'"; exit 2; }
exec "$PYTHON" scripts/gpu_check.py "$@"
