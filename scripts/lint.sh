#!/usr/bin/env bash
# npm run lint: Biome's lint rules and formatting check for the TypeScript (biome.json)
# and Ruff's for the Python harness, its tests and the scripts (ruff.toml). To fix the
# formatting: `npx biome format --write .` and `uvx ruff@0.14.6 format .`. Ruff comes
# from PyPI through uv (on PATH, or the one scripts/setup.sh installs into nnrag's tools
# folder); a `ruff` on PATH is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
RUFF_VERSION=0.14.6

npx biome check .

if command -v ruff >/dev/null 2>&1; then
  ruff check .
  ruff format --check .
else
  uv=$(command -v uv || true)
  if [ -z "$uv" ]; then
    home=$(node -e "import('./dist/src/environment/pypi.js').then((m) => console.log(m.nnragHome()))")
    uv="$home/tools/bin/uv"
  fi
  [ -x "$uv" ] || { echo "lint: no uv to run ruff with (bash scripts/setup.sh installs it)" >&2; exit 1; }
  "$uv" tool run "ruff@$RUFF_VERSION" check .
  "$uv" tool run "ruff@$RUFF_VERSION" format --check .
fi
