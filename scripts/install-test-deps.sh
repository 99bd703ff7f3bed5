#!/usr/bin/env bash
# System packages the tests use, from Debian: docker-compose (to validate docker-compose.yml) and chromium
# (the browser the UI tests drive through Playwright; never a browser downloaded by Playwright).
# Installed only when missing and when apt-get can run; otherwise the tests that need them say why they skip.
set -euo pipefail
need=()
command -v docker-compose >/dev/null || need+=(docker-compose)
command -v chromium >/dev/null || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "note: cannot install ${need[*]} (needs root and apt-get); the tests that use them will skip" >&2
fi
