#!/usr/bin/env bash
# After ../shared/device/prepare: drop from .device/wheels what Kernel Tuner declares but does not
# import for brute-force tuning (scipy, pandas, scikit-learn, pymoo and what they pull in), so
# that .device fits the device tool's 64 MiB carry limit (104 MB -> 19 MB, 2026-11-30).
# Seen on the H200 that day: kernel_tuner 1.5.0 tune_kernel ran without them (bench_optimizer.py,
# bench_runner.py).
# matplotlib and what it imports (pillow, fonttools, kiwisolver, contourpy, cycler, pyparsing,
# python-dateutil: 25 MB of cp312 wheels on 2026-12-02) are kept, so that the kernel report's GPU
# test (tests/test_report_gpu.py) draws and checks its SVG there too; --no-report drops them.
# Fails when .device is still over the carry limit.
set -euo pipefail
cd "$(dirname "$0")/../.device/wheels"
drop="scipy pandas scikit_learn pymoo autograd cma moocore alive_progress about_time graphemeu
      joblib threadpoolctl narwhals deprecated wrapt tzdata
      ray"  # ray (the test extra's Ray lanes, ~75 MB) alone is over the carry limit: not tested there
if [ "${1:-}" = "--no-report" ]; then
  drop="$drop matplotlib pillow fonttools kiwisolver contourpy cycler python_dateutil pyparsing"
fi
for prefix in $drop; do
  rm -f "${prefix}"-*.whl
done
for needed in matplotlib pillow fonttools kiwisolver contourpy cycler python_dateutil pyparsing; do
  if [ "${1:-}" != "--no-report" ] && ! ls "${needed}"-*.whl >/dev/null 2>&1; then
    echo "note: no ${needed} wheel in .device/wheels: the report's GPU test will check its data only" >&2
  fi
done
du -sh ..
kib=$(du -sk .. | cut -f1)
if [ "$kib" -gt $((64 * 1024)) ]; then
  echo "error: .device is ${kib} KiB, over the device tool's 64 MiB carry limit (try --no-report)" >&2
  exit 1
fi
