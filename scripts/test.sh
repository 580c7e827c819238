#!/usr/bin/env bash
# Installs cudalens with its test dependencies into .venv and runs the test suite, then the
# VS Code end-to-end test (client-vscode/e2e/run.sh: code-server driven by headless Chromium,
# against the deterministic model runner, tests/data/lsp/model_runner.py; no GPU). Set
# CUDALENS_SKIP_VSCODE=1 to run only pytest. Both run whatever the first gives
# (scripts/run_suites.sh); the script fails when either fails, with pytest's exit status kept
# when pytest failed.
# GPU tests (marker `gpu`) run where pycuda and an NVIDIA GPU are present and skip elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
# Neovim (Debian package) for the headless editor test; the test skips, saying why, without it.
PYTHON=.venv/bin/python bash tests/data/lsp/install_neovim.sh
# Emacs (emacs-nox, and elpa-eglot before Emacs 29) for the headless eglot test; same rule.
bash tests/data/lsp/install_emacs.sh
# both suites run; the script fails when either fails, with pytest's status kept when it failed
exec bash scripts/run_suites.sh "$PWD/.venv/bin/python" "$@"
