#!/usr/bin/env bash
# Installs cudalens with its test dependencies into .venv and runs the test suite.
# GPU tests (marker `gpu`) run where pycuda and an NVIDIA GPU are present and skip elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
# Neovim (Debian package) for the headless editor test; the test skips, saying why, without it.
bash tests/data/lsp/install_neovim.sh
exec .venv/bin/python -m pytest "$@"
