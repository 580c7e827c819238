#!/usr/bin/env bash
# Capture and replay end to end on a GPU (issue 13, items 2 and 3), about 2-3 minutes:
#   (a) a C++ program with the CUDA runtime linked statically (nvcc -cudart static),
#   (b) a PyTorch program calling its own kernel (torch.utils.cpp_extension.load_inline, or
#       nvcc + ctypes when ninja is missing),
#   (c) a CSR SpMV whose structure only the capture knows (replayed with --capture-only),
# plus the refusals: over --max-bytes, a kernel never launched.
# Each program's output under capture must equal its plain run's (the recorder changes
# nothing). Run from the repository root:  source .device/setup.sh && benchmarks/capture_e2e.sh
# Logs: $LOG_DIR (default benchmarks/results/capture-e2e-<date>), one file per step.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT/server:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY=${PY:-python3}
LOG_DIR=${LOG_DIR:-$ROOT/benchmarks/results/capture-e2e-$(date -u +%Y-%m-%d)}
mkdir -p "$LOG_DIR"
WORK=$(mktemp -d)
cp "$ROOT"/tests/data/capture/* "$WORK"/
cd "$WORK"
export CUDALENS_CACHE_DIR="$WORK/cache"
FAILED=0
step() { echo "== $1"; }
fail() { echo "FAIL: $1"; FAILED=1; }
cudalens() { "$PY" -m cudalens "$@"; }
capture_of() { ls .cudalens/captures/*/"$1"-launch1.json 2>/dev/null | head -1; }
replay() {  # replay NAME FILE [extra optimize options]
  local name=$1 file=$2; shift 2
  local cap; cap=$(capture_of "$name")
  [ -n "$cap" ] || { fail "$name: no capture written"; return; }
  cudalens optimize "$file" --capture "$cap" --proposer builtin --budget 4 --repetitions 20 \
    --json "$LOG_DIR/$name-optimize.json" "$@" >"$LOG_DIR/$name-optimize.out" 2>"$LOG_DIR/$name-optimize.err"
  local rc=$?
  cat "$LOG_DIR/$name-optimize.err" "$LOG_DIR/$name-optimize.out"
  [ $rc -eq 0 ] || fail "$name: optimize --capture exited $rc"
  # Verified on the captured case: the timed case is the captured one and a candidate passed
  # (a run with no faster candidate prints no "Verified against" line, so read the record).
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
ok = d["problem"]["case"] == "captured" and any(c["verdict"]["status"] == "passed" for c in d["candidates"])
sys.exit(0 if ok else 1)' "$LOG_DIR/$name-optimize.json" \
    || fail "$name: no candidate verified on the captured case"
}
same_output() {  # same_output NAME PLAIN CAPTURED
  if [ "$(grep checksum "$2")" = "$(grep checksum "$3")" ] && grep -q checksum "$2"; then
    echo "$1: output unchanged under capture: $(grep checksum "$2")"
  else fail "$1: output changed under capture: '$(grep checksum "$2")' vs '$(grep checksum "$3")'"; fi
}
T0=$(date +%s)

step "(a) static runtime"
nvcc -O2 -cudart static -o saxpy_app saxpy_main.cu || fail "nvcc saxpy_main.cu"
if ldd ./saxpy_app | grep -q libcudart; then fail "saxpy_app links libcudart.so dynamically"; fi
./saxpy_app >"$LOG_DIR/a-plain.out"
cudalens capture --kernel saxpy --launch 1 -- ./saxpy_app >"$LOG_DIR/a-capture.out" 2>&1 \
  || fail "(a) capture exited $?"
cat "$LOG_DIR/a-capture.out"
same_output "(a)" "$LOG_DIR/a-plain.out" "$LOG_DIR/a-capture.out"
cp "$(capture_of saxpy)" "$LOG_DIR/a-manifest.json" 2>/dev/null
replay saxpy saxpy_kernel.cu

step "(a') refusals"
cudalens capture --kernel saxpy --max-bytes 4096 --out refused -- ./saxpy_app >"$LOG_DIR/a-maxbytes.out" 2>&1
rc=$?; cat "$LOG_DIR/a-maxbytes.out"
{ [ $rc -eq 1 ] && grep -q "over --max-bytes 4096; nothing was copied" "$LOG_DIR/a-maxbytes.out" && [ ! -d refused ]; } \
  || fail "--max-bytes was not refused (rc $rc)"
cudalens capture --kernel layernorm -- ./saxpy_app >"$LOG_DIR/a-never.out" 2>&1
rc=$?; cat "$LOG_DIR/a-never.out"
{ [ $rc -eq 1 ] && grep -q "it was never launched; the program launched saxpy" "$LOG_DIR/a-never.out"; } \
  || fail "a kernel never launched was not reported (rc $rc)"

step "(b) PyTorch"
"$PY" torch_bias_relu.py >"$LOG_DIR/b-plain.out" 2>&1 || fail "(b) plain run failed"
cat "$LOG_DIR/b-plain.out"
cudalens capture --kernel bias_relu -- "$PY" torch_bias_relu.py >"$LOG_DIR/b-capture.out" 2>&1 \
  || fail "(b) capture exited $?"
cat "$LOG_DIR/b-capture.out"
same_output "(b)" "$LOG_DIR/b-plain.out" "$LOG_DIR/b-capture.out"
cp "$(capture_of bias_relu)" "$LOG_DIR/b-manifest.json" 2>/dev/null
replay bias_relu bias_relu_kernel.cu

step "(c) CSR SpMV"
nvcc -O2 -o spmv_app spmv_main.cu || fail "nvcc spmv_main.cu"
./spmv_app >"$LOG_DIR/c-plain.out"
cudalens capture --kernel spmv_csr -- ./spmv_app >"$LOG_DIR/c-capture.out" 2>&1 \
  || fail "(c) capture exited $?"
cat "$LOG_DIR/c-capture.out"
same_output "(c)" "$LOG_DIR/c-plain.out" "$LOG_DIR/c-capture.out"
cp "$(capture_of spmv_csr)" "$LOG_DIR/c-manifest.json" 2>/dev/null
replay spmv_csr spmv.cu --capture-only

echo "== done in $(( $(date +%s) - T0 )) s; logs in $LOG_DIR"
[ $FAILED -eq 0 ] && echo "ALL PASSED" || echo "SOME STEPS FAILED"
exit $FAILED
