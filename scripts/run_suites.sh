#!/usr/bin/env bash
# Runs the two test suites one after the other, whatever the first gives: pytest
# (`PYTHON -m pytest ARGS...`), then the VS Code end-to-end test (client-vscode/e2e/run.sh)
# unless CUDALENS_SKIP_VSCODE=1. Says how each ended, and exits with pytest's status when
# pytest failed, else with the end-to-end test's: a pytest failure no longer hides the
# end-to-end result. Usage (from scripts/test.sh): run_suites.sh PYTHON [PYTEST ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
python="$1"
shift
pytest_status=0
"$python" -m pytest "$@" || pytest_status=$?
e2e_status=0
if [ "${CUDALENS_SKIP_VSCODE:-0}" = 1 ]; then
  e2e="not run (CUDALENS_SKIP_VSCODE=1)"
else
  CUDALENS_E2E_PYTHON="$python" bash client-vscode/e2e/run.sh || e2e_status=$?
  if [ "$e2e_status" = 0 ]; then e2e="passed"; else e2e="failed (exit status $e2e_status)"; fi
fi
if [ "$pytest_status" = 0 ]; then pytest="passed"; else pytest="failed (exit status $pytest_status)"; fi
echo "test.sh: pytest $pytest; VS Code end-to-end $e2e"
if [ "$pytest_status" != 0 ]; then
  exit "$pytest_status"
fi
exit "$e2e_status"
