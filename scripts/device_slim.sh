#!/usr/bin/env bash
# After ../shared/device/prepare: drop from .device/wheels what Kernel Tuner declares but does not
# import for brute-force tuning (scipy, pandas, scikit-learn, pymoo, matplotlib and what they pull
# in), so that .device fits the device tool's 64 MiB carry limit (104 MB -> 19 MB, 2026-11-30).
# Seen on the H200 that day: kernel_tuner 1.5.0 tune_kernel ran without them (bench_optimizer.py,
# bench_runner.py).
set -euo pipefail
cd "$(dirname "$0")/../.device/wheels"
for prefix in scipy pandas matplotlib scikit_learn pymoo pillow fonttools kiwisolver contourpy \
              cycler autograd cma moocore alive_progress about_time graphemeu joblib \
              threadpoolctl narwhals deprecated wrapt python_dateutil tzdata; do
  rm -f "${prefix}"-*.whl
done
du -sh ..
