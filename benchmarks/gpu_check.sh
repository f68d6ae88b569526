#!/usr/bin/env bash
# The GPU figures of issue 20, in one prepared run of at most 8 minutes on the GPU machine.
#
# That machine has Python 3.12 with PyTorch (CUDA), pandas, SciPy and matplotlib, but no
# Keras, keras-hub or pydantic, and no network. `make gpu-wheels` builds those wheels here
# into .whl/ (git ignores it); the device tool carries it (`carry: [".whl"]`) and this script
# installs them into /tmp/site, then measures (benchmarks/run_all.py --gpu):
#   - the suite's language model on Keras's torch backend (cuDNN through PyTorch) against the
#     plain PyTorch cuDNN script, full size (goal >= 0.9);
#   - 1, 8 and 64 seeds trained together against one after another (benchmarks/seeds_together.py;
#     goal at 64: >= 20x);
#   - the Keras addition example: the suite against plain Keras on torch and JAX and plain PyTorch, each
#     with the GPU (benchmarks/plain_scripts.py; goal >= 1.5x the fastest script).
# It writes gpu-<UTC time>.csv into $OUT (the device tool's folder) or benchmarks/results/.
# Without CUDA (here) it runs the same code on the CPU at tiny sizes, which is how it is tested.
#
#   benchmarks/gpu_check.sh [--tiny]         PYTHON=.venv/bin/python to use this machine's venv
#   benchmarks/gpu_check.sh --published      the published experiment a CPU cuts short, at a longer budget
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ -d .whl ] && ! "$PYTHON" -c "import keras" 2>/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # seqkeras from this working tree, not installed
export KERAS_BACKEND=torch PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
  torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
# `gpu_check.sh --published` runs, instead of the benchmarks, the published experiment whose budget two CPU cores
# cut short (docs/guides/published.md): chrono initialization on the adding problem at twice its committed
# 10,000 iterations, into $OUT/published/.
if [ "${1:-}" = "--published" ]; then
  shift
  exec timeout 540 "$PYTHON" -m seqkeras run experiments/published/chrono_adding.yaml --set train.steps=20000 \
    --jobs 2 --out "${OUT:-/tmp}/published" "$@"
fi
timeout 480 "$PYTHON" benchmarks/run_all.py --gpu "$@" --out "${OUT:-benchmarks/results}"
