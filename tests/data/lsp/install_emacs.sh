#!/usr/bin/env bash
# Installs Emacs without X (Debian's emacs-nox) and, where Emacs is older than 29 (which has
# eglot built in), Debian's elpa-eglot, for tests/test_lsp_emacs.py. About 45 s and 110 MB on
# Debian 12. Safe to run more than once; prints why and exits 0 when it cannot install (the
# test then skips and says so).
set -uo pipefail
has_eglot() {
    command -v emacs >/dev/null 2>&1 && emacs --batch --eval "(require 'eglot)" >/dev/null 2>&1
}
if has_eglot; then
    echo "emacs with eglot present: $(emacs --version | head -1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not available: Emacs not installed; tests/test_lsp_emacs.py will skip"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "not root and no passwordless sudo: Emacs not installed; the test will skip"
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
if ! $SUDO apt-get install -y -qq --no-install-recommends emacs-nox; then
    echo "apt-get could not install emacs-nox; tests/test_lsp_emacs.py will skip"
    exit 0
fi
if ! has_eglot && ! $SUDO apt-get install -y -qq --no-install-recommends elpa-eglot; then
    echo "apt-get could not install elpa-eglot (Emacs before 29 has no eglot); the test will skip"
fi
echo "installed: $(emacs --version | head -1)"
exit 0
