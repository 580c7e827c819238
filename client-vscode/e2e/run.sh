#!/usr/bin/env bash
# One command for the VS Code end-to-end test: builds, lints and unit-tests the extension,
# packages the .vsix, installs it into a fresh code-server with a temporary workspace holding
# examples/saxpy.cu (with its .cu.spec) and a broken copy, and drives it headless
# (e2e/driver.mjs): code lens, compile-error squiggle, optimize against the deterministic model
# runner (tests/data/lsp/model_runner.py: modelled times, NOT measurements; no GPU), the diff
# editor (its two panes' rendered lines and the accept/reject buttons, waited for), reject,
# accept, and the kernel report webview.
# Screenshots of each step go to the folder printed at the end.
#
# Environment: CUDALENS_E2E_PYTHON (Python with cudalens installed; default .venv/bin/python
# of the repo), CUDALENS_E2E_DIR (work folder; default a new temp folder),
# CUDALENS_E2E_UPDATE_DOCS=1 (copy three screenshots to docs/screenshots/),
# CUDALENS_VSCODE_CACHE (see install_deps.sh).
set -euo pipefail
START=$(date +%s)
HERE="$(cd "$(dirname "$0")" && pwd)"
EXT="$(dirname "$HERE")"
REPO="$(dirname "$EXT")"
say() { echo "e2e: [$(( $(date +%s) - START )) s] $*"; }

say "dependencies (apt chromium, Node 24, code-server; cached)"
ENV_SH="$(bash "$HERE/install_deps.sh" | tail -n 1)"
# shellcheck disable=SC1090
source "$ENV_SH"

cd "$EXT"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
say "typecheck, lint, unit tests, package"
npm run --silent typecheck
npm run --silent lint
npm test --silent >"${TMPDIR:-/tmp}/cudalens-unit.log" 2>&1 || { cat "${TMPDIR:-/tmp}/cudalens-unit.log"; exit 1; }
grep -E '^ℹ (tests|pass|fail) ' "${TMPDIR:-/tmp}/cudalens-unit.log"
npm run --silent package >/dev/null
VSIX="$EXT/cudalens.vsix"

PY="${CUDALENS_E2E_PYTHON:-$REPO/.venv/bin/python}"
[ -x "$PY" ] || { echo "e2e: expected a Python with cudalens installed at $PY (set CUDALENS_E2E_PYTHON)" >&2; exit 1; }
# what the driver checks: the optimizer's search run on saxpy against the same model, with the
# server's default settings (nothing typed in; any change to the search changes it too)
EXPECT="$(cd "$REPO" && PYTHONPATH="$REPO/server:$REPO:$REPO/tests/data/lsp" "$PY" \
  "$REPO/tests/data/lsp/expected.py" saxpy)"

T="${CUDALENS_E2E_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cudalens-e2e.XXXXXX")}"
mkdir -p "$T"
WS="$T/workspace"; SHOTS="$T/screenshots"
rm -rf "$WS" "$SHOTS" "$T/ud" "$T/exts" "$T/xdg"
mkdir -p "$WS" "$SHOTS" "$T/ud/User" "$T/xdg"
cp "$REPO/examples/saxpy.cu" "$REPO/examples/saxpy.cu.spec" "$WS/"
sed 's/y\[i\] = a \* x\[i\] + y\[i\];/y[i] = a * x[i] + missing_factor;/' "$REPO/examples/saxpy.cu" > "$WS/broken.cu"
grep -q missing_factor "$WS/broken.cu" || { echo "e2e: could not break line 8 of saxpy.cu" >&2; exit 1; }

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$T/cs.yaml"
"$PY" - "$T/ud/User/settings.json" "$PY" "$REPO" <<'PYEOF'
import json, sys
out, py, repo = sys.argv[1:]
json.dump({
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "extensions.ignoreRecommendations": True,
    "telemetry.telemetryLevel": "off",
    "git.enabled": False,
    "chat.disableAIFeatures": True,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "cudalens.interpreter": py,
    "cudalens.server.args": ["--runner-factory", "model_runner:make_client"],
    "cudalens.server.env": {"PYTHONPATH": f"{repo}/server:{repo}:{repo}/tests/data/lsp",
                            "CUDALENS_MODEL_STEP_S": "0.1"},
    "cudalens.server.logLevel": "info",
    "cudalens.check.debounceMs": 100,
}, open(out, "w"), indent=2)
PYEOF

CS=(env XDG_DATA_HOME="$T/xdg" XDG_CONFIG_HOME="$T/xdg" "$CUDALENS_CODE_SERVER" --config "$T/cs.yaml"
    --user-data-dir "$T/ud" --extensions-dir "$T/exts")
say "install $VSIX into a fresh code-server"
"${CS[@]}" --install-extension "$VSIX" >"$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }

say "start code-server on 127.0.0.1:$PORT (log: $T/code-server.log)"
setsid "${CS[@]}" --disable-telemetry --disable-update-check --disable-workspace-trust "$WS" \
  >"$T/code-server.log" 2>&1 &
CS_PID=$!
cleanup() {
  # code-server and its helpers (agent host, extension host, language server) share its group
  kill -TERM -- "-$CS_PID" 2>/dev/null || true
  sleep 1
  kill -KILL -- "-$CS_PID" 2>/dev/null || true
}
trap cleanup EXIT
healthy() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
  "http://127.0.0.1:$PORT/healthz" 2>/dev/null; }
for _ in $(seq 1 60); do
  healthy && break
  sleep 0.5
done
healthy || { cat "$T/code-server.log"; echo "e2e: code-server did not start in 30 s" >&2; exit 1; }

say "drive it headless"
CHECK_NVCC=0
command -v nvcc >/dev/null 2>&1 && CHECK_NVCC=1
RC=0
E2E_URL="http://127.0.0.1:$PORT" E2E_WORKSPACE="$WS" E2E_SHOTS="$SHOTS" \
  E2E_CHROMIUM="$CUDALENS_CHROMIUM" E2E_CHECK_NVCC="$CHECK_NVCC" \
  E2E_EXPECT="$EXPECT" node "$HERE/driver.mjs" || RC=$?
if [ "$RC" != 0 ]; then
  echo "e2e: the extension's output and server log follow" >&2
  find "$T/ud/logs" -name '*cudalens*' -exec tail -n 60 {} \; >&2 2>/dev/null || true
fi
if [ "$RC" = 0 ] && [ "${CUDALENS_E2E_UPDATE_DOCS:-0}" = 1 ]; then
  mkdir -p "$REPO/docs/screenshots"
  cp "$SHOTS"/*-results.png "$REPO/docs/screenshots/vscode-code-lens.png"
  cp "$SHOTS"/*-diff.png "$REPO/docs/screenshots/vscode-diff.png"
  cp "$SHOTS"/*-report.png "$REPO/docs/screenshots/vscode-report-model.png"
  say "copied three screenshots to $REPO/docs/screenshots/"
fi
say "screenshots: $SHOTS"
say "$([ "$RC" = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - START )) s"
exit "$RC"
