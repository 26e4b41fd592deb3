#!/usr/bin/env bash
# Installs everything nnrag needs on a fresh machine of this kind (Debian + Node 20):
# the validation environment (Debian's Python with PyTorch 1.13, torchvision, pyflakes),
# dh-python (its table maps Python distributions to Debian packages), debootstrap
# (`nnrag env create` builds root filesystems with it; a CI test builds a small one),
# Chromium for the web catalog's browser test,
# bubblewrap for the sandbox, git, then the npm dependencies, then the build.
# The dependencies whose install scripts run (better-sqlite3's native binding,
# tree-sitter-python's) are declared in package.json `allowScripts` (npm 11's policy),
# so npm ci installs them without a warning.
# Safe to run again: apt is skipped when the packages are already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in python3-torch python3-torchvision python3-pyflakes bubblewrap git chromium dh-python debootstrap; do
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
