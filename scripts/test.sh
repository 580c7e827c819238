#!/usr/bin/env bash
# Installs cudalens with its test dependencies into .venv and runs the test suite, then the
# VS Code end-to-end test (client-vscode/e2e/run.sh: code-server driven by headless Chromium,
# against the deterministic model runner, tests/data/lsp/model_runner.py; no GPU). Set CUDALENS_SKIP_VSCODE=1 to run
# only pytest. The script fails when either fails; with pytest failing, its exit code is kept.
# GPU tests (marker `gpu`) run where pycuda and an NVIDIA GPU are present and skip elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
# Neovim (Debian package) for the headless editor test; the test skips, saying why, without it.
bash tests/data/lsp/install_neovim.sh
.venv/bin/python -m pytest "$@"
if [ "${CUDALENS_SKIP_VSCODE:-0}" = 1 ]; then
  echo "test.sh: CUDALENS_SKIP_VSCODE=1: the VS Code end-to-end test is not run"
else
  CUDALENS_E2E_PYTHON="$PWD/.venv/bin/python" bash client-vscode/e2e/run.sh
fi
