#!/usr/bin/env bash
# The whole GPU suite in one call: every gpu-marked test, then the GPU benchmarks.
# Results (junit, per-test JSON lines, benchmark JSON) go to $OUT (default ./gpu-results).
#
#   bash scripts/gpu_suite.sh [tests|bench|all] [pytest args, e.g. test paths; default: tests]
#
# On the device machine the packages its image lacks come as wheels in .whl/ (see
# docs/benchmarks.md); elsewhere an installed cuda-agent is used as it is.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
if [ -d .whl ] && ! python3 -c "import pydantic, openai" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD/src:$PWD:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
[ -d shared/kernelbench ] && export CUDA_AGENT_SHARED=$PWD/shared
export CUDA_AGENT_CACHE=${CUDA_AGENT_CACHE:-/tmp/cuda-agent-cache}
export CUDA_AGENT_TEST_CACHE=$CUDA_AGENT_CACHE
export CUDA_AGENT_GPU_REPORT=$OUT/gpu_report.jsonl
export CUDA_AGENT_GUARD_REPORT=$OUT/guard_report.jsonl
export CUDA_AGENT_COMMIT=${CUDA_AGENT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  [ $# -gt 0 ] || set -- tests
  python3 -m pytest -m gpu -p no:cacheprovider -q -rfE --log-level=WARNING --junitxml "$OUT/junit.xml" "$@" \
    2>&1 | tee "$OUT/pytest.log" || status=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 benchmarks/env_round.py --out "$OUT/env_round.json" --cache "$CUDA_AGENT_CACHE" \
    2>&1 | tee "$OUT/env_round.log" || status=1
fi
exit $status
