#!/usr/bin/env bash
# Installs everything nnrag needs on a fresh machine of this kind (Debian + Node 20):
# uv (from PyPI) and the default validation environment it builds (a virtual environment
# with torch 2.x from PyPI, torchvision, numpy and pytest: `nnrag env create`, locked; the
# Linux wheels carry CUDA libraries, ~3 GB downloaded once per machine into uv's cache,
# and run on the CPU), Debian's Python with PyTorch 1.13 (the older target, through
# --python /usr/bin/python3), python3-dev and python3-venv (headers to build compiled
# operators; the venv module for uv's own install), torchvision, pyflakes,
# dh-python (its table maps Python distributions to Debian packages), debootstrap
# (`nnrag env create` builds root filesystems with it; a CI test builds a small one),
# Chromium for the web catalog's browser test,
# bubblewrap for the sandbox, git, Redis (the queue of `nnrag queue`/`nnrag worker`; its
# test starts its own server on loopback), then the npm dependencies, then the build.
# The dependencies whose install scripts run (better-sqlite3's native binding,
# tree-sitter-python's, msgpackr-extract's prebuilt loader for bullmq) are declared in
# package.json `allowScripts` (npm 11's policy), so npm ci installs them without a warning.
# Safe to run again: apt is skipped when the packages are already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in python3-torch python3-torchvision python3-pyflakes python3-dev python3-venv bubblewrap git chromium dh-python debootstrap redis-server; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${need[*]} with apt-get" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build --silent

# uv, from PyPI, into nnrag's own tools folder unless one is on PATH already
NNRAG_HOME_DIR=$(node -e "import('./dist/src/environment/pypi.js').then((m) => console.log(m.nnragHome()))")
if ! command -v uv >/dev/null 2>&1 && [ ! -x "$NNRAG_HOME_DIR/tools/bin/uv" ]; then
  echo "setup: installing uv into $NNRAG_HOME_DIR/tools" >&2
  mkdir -p "$NNRAG_HOME_DIR"
  /usr/bin/python3 -m venv "$NNRAG_HOME_DIR/tools"
  "$NNRAG_HOME_DIR/tools/bin/pip" install -q uv
fi

# the default validation environment (made once; synced when nnrag's tools change)
ENV_DIR=$(node -e "import('./dist/src/environment/pypi.js').then((m) => console.log(m.defaultEnvDir()))")
if [ -x "$ENV_DIR/bin/python" ]; then
  node dist/src/cli/bin.js env sync "$ENV_DIR" --packages torchvision >&2
else
  echo "setup: building the validation environment in $ENV_DIR (torch from PyPI; the first time downloads ~3 GB)" >&2
  node dist/src/cli/bin.js env create "$ENV_DIR" --packages torchvision >&2
fi
