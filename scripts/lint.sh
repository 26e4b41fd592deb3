#!/usr/bin/env bash
# npm run lint: Biome's lint rules for the TypeScript (biome.json) and Ruff's for the
# Python harness, its tests and the scripts (ruff.toml). Rules only: formatting is
# checked once the code has had its one formatting pass (`npx biome format --write .`,
# `ruff format`). Ruff comes from PyPI through uv (on PATH, or the one scripts/setup.sh
# installs into nnrag's tools folder); a `ruff` on PATH is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
RUFF_VERSION=0.14.6

npx biome lint .

if command -v ruff >/dev/null 2>&1; then
  ruff check .
else
  uv=$(command -v uv || true)
  if [ -z "$uv" ]; then
    home=$(node -e "import('./dist/src/environment/pypi.js').then((m) => console.log(m.nnragHome()))")
    uv="$home/tools/bin/uv"
  fi
  [ -x "$uv" ] || { echo "lint: no uv to run ruff with (bash scripts/setup.sh installs it)" >&2; exit 1; }
  "$uv" tool run "ruff@$RUFF_VERSION" check .
fi
