#!/usr/bin/env bash
# Regenerate the frontend's typed API client from the backend's OpenAPI document. Never edit the output by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-frontend/src/client}
mkdir -p "$out"
.venv/bin/tunelab openapi > "$out/openapi.json"
(cd frontend && npx --no-install openapi-typescript "$(cd .. && realpath "$out")/openapi.json" \
  -o "$(cd .. && realpath "$out")/schema.d.ts" >/dev/null)
