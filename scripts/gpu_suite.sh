#!/usr/bin/env bash
# The whole GPU suite: every gpu-marked test, the GPU benchmarks, the KernelBench sweeps.
# Results (junit, per-test JSON lines, benchmark JSON, run folders as .tar.gz) go to $OUT
# (default ./gpu-results).
#
#   bash scripts/gpu_suite.sh [tests|bench|synth|kernelbench|all|rl] [pytest args; default: tests]
#
#   tests        every gpu-marked test, GPU_WORKERS (default: the cores less four, 2 to 12)
#                pytest workers sharing the GPU, those marked large_gpu_memory on one of them
#                (timed sections never overlap: docs/verdict.md, GPU lock)
#   bench        env_round (ours vs a CUDA-Agent-style loop), stored-solution runs over the
#                honest fixtures with their reports, service throughput (BENCH_STEPS picks:
#                "env_round stored service" by default; "busy_host" adds benchmarks/busy_host.py
#                (an honest kernel and the patched-clock cheat on a host whose cores are held
#                by CPU-bound processes)); "single_file" runs
#                benchmarks/single_file_vs_kernelbench.py and "compare"
#                benchmarks/compare_with_kernelbench.py (both harnesses on the same files, then
#                `cuda-agent compare`; it needs pydra-config) against the KernelBench checkout in
#                $KERNELBENCH_REPO); "timing" runs benchmarks/timing_vs_kernelbench.py (our three
#                timing methods beside KernelBench's cuda_event timing and a torch.profiler kernel
#                sum, 50 level-1 tasks small and large, against the same checkout); "packed" runs
#                benchmarks/packed_workers.py (--gpus 0,0,0 against --gpus 0 on PACKED_TASKS,
#                default builtin, with PACKED_SOLUTIONS, default tests/fixtures/solutions))
#   synth        synthesis throughput: 300 candidates through every stage, 14 workers, cut at
#                255 s (setup included) with partial results kept
#   kernelbench  eager/torch.compile baselines and the null-kernel audit of all 250 problems
#                (resumable: put an earlier kernelbench_baselines.jsonl in $RESUME_DIR; KB_AUDIT=0
#                skips the audit). On a fresh H200 it takes about 11.5 min, the audits and first
#                compiles alone 4.5 min
#
# KernelBench's problems (stored, synth, kernelbench, and the tests that need the real 250) come
# from $CUDA_AGENT_KERNELBENCH: a KernelBench checkout, a folder of level folders, a JSONL (level,
# problem_id, name, code) or parquet. Unset, it is pointed at
# $CUDA_AGENT_SHARED/kernelbench/kernelbench_l1-l3.jsonl (default: shared/ in the checkout) where
# that file exists; with neither, `--tasks kernelbench` reads the Hugging Face dataset
# ScalingIntelligence/KernelBench (network and the kernelbench extra).
# Where a .whl/ folder holds wheels (scripts/fetch_gpu_wheels.sh) and the Python lacks the
# packages, they are installed from it; elsewhere an installed cuda-agent is used as it is.
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
[ -d shared/kernelbench ] && export CUDA_AGENT_SHARED=${CUDA_AGENT_SHARED:-$PWD/shared}
SHARED=${CUDA_AGENT_SHARED:-$PWD/shared}
if [ -z "${CUDA_AGENT_KERNELBENCH:-}" ] && [ -f "$SHARED/kernelbench/kernelbench_l1-l3.jsonl" ]; then
  export CUDA_AGENT_KERNELBENCH=$SHARED/kernelbench/kernelbench_l1-l3.jsonl
fi
export CUDA_AGENT_CACHE=${CUDA_AGENT_CACHE:-/tmp/cuda-agent-cache}
export CUDA_AGENT_TEST_CACHE=$CUDA_AGENT_CACHE
export CUDA_AGENT_GPU_REPORT=$OUT/gpu_report.jsonl
export CUDA_AGENT_GUARD_REPORT=$OUT/guard_report.jsonl
export CUDA_AGENT_COMMIT=${CUDA_AGENT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# The files' own identity, beside the commit: the git tree of what is here (tracked and
# unignored files), equal to `git rev-parse COMMIT^{tree}` of the commit they came from even
# where the files were copied over an older checkout's git metadata.
index=$(mktemp -u)
tree=$(GIT_INDEX_FILE=$index git add -A . 2>/dev/null && GIT_INDEX_FILE=$index git write-tree 2>/dev/null)
rm -f "$index"
export CUDA_AGENT_TREE=${CUDA_AGENT_TREE:-${tree:-unknown}}
echo "commit $CUDA_AGENT_COMMIT, tree $CUDA_AGENT_TREE" | tee "$OUT/code.txt"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
cli() { python3 -m cuda_agent "$@"; }
status=0

if [ "$what" = tests ] || [ "$what" = all ]; then
  [ $# -gt 0 ] || set -- tests
  parallel=()
  workers=$(( $(nproc) - 4 ))
  workers=$(( workers < 2 ? 2 : workers > 12 ? 12 : workers ))
  # tests marked large_gpu_memory (tens of GiB each) share one worker, so one runs at a time
  python3 -c "import xdist" 2>/dev/null && parallel=(-n "${GPU_WORKERS:-$workers}" --dist loadgroup)
  python3 -m pytest -m gpu -p no:cacheprovider -q -rfE --log-level=WARNING "${parallel[@]}" \
    --junitxml "$OUT/junit.xml" "$@" 2>&1 | tee "$OUT/pytest.log" || status=1
  # one JSON line per test: outcome and seconds, with the GPU, date, commit and tree
  python3 scripts/junit_records.py "$OUT/junit.xml" > "$OUT/gpu_tests.jsonl" || status=1
fi

steps=" ${BENCH_STEPS:-env_round stored service} "
if [ "$what" = bench ] || [ "$what" = all ]; then
  if [[ $steps == *" env_round "* ]]; then
    python3 benchmarks/env_round.py --out "$OUT/env_round.json" --cache "$CUDA_AGENT_CACHE" \
      --reference-rounds "${REFERENCE_ROUNDS:-2}" \
      --case elementwise_chain=tests/sandbox/solutions/elementwise_chain \
      --case scaled_softmax=tests/fixtures/solutions/scaled_softmax \
      2>&1 | tee "$OUT/env_round.log" || status=1
  fi
  if [[ $steps == *" single_file "* ]]; then  # our single-file verdict beside KernelBench's
    python3 benchmarks/single_file_vs_kernelbench.py --kernelbench "${KERNELBENCH_REPO:?}" \
      --out "$OUT/single_file_vs_kernelbench.jsonl" 2>&1 | tee "$OUT/single_file.log" || status=1
  fi
  if [[ $steps == *" compare "* ]]; then  # cuda-agent compare on KernelBench's own results
    work=$(mktemp -d)
    python3 benchmarks/compare_with_kernelbench.py --kernelbench "${KERNELBENCH_REPO:?}" \
      --work "$work/compare" --out-file "$OUT/compare_with_kernelbench.jsonl" \
      --cache "$CUDA_AGENT_CACHE" 2>&1 | tee "$OUT/compare.log" || status=1
    tar -czf "$OUT/compare_runs.tar.gz" -C "$work" --exclude=kernelbench-build compare
  fi
  if [[ $steps == *" timing "* ]]; then  # our speed-ups beside KernelBench's and a profiler's
    work=${TIMING_WORK:-/tmp/timing-vs-kernelbench}
    python3 benchmarks/timing_vs_kernelbench.py --kernelbench "${KERNELBENCH_REPO:?}" \
      --work "$work" --out "$OUT/timing_vs_kernelbench.jsonl" --gpus "${TIMING_GPUS:-0,0}" \
      --cache "$CUDA_AGENT_CACHE" 2>&1 | tee "$OUT/timing.log" || status=1
    tar -czf "$OUT/timing_runs.tar.gz" -C "$work" run kernelbench.jsonl || status=1
  fi
  if [[ $steps == *" packed "* ]]; then  # three workers on one GPU against one, same files
    python3 benchmarks/packed_workers.py --tasks "${PACKED_TASKS:-builtin}" \
      --solutions "${PACKED_SOLUTIONS:-tests/fixtures/solutions}" --work "${PACKED_WORK:-/tmp/packed}" \
      --out "$OUT/packed_workers.jsonl" --cache "$CUDA_AGENT_CACHE" 2>&1 | tee "$OUT/packed.log" \
      || status=1
  fi
  if [[ $steps == *" busy_host "* ]]; then  # verdicts while CPU-bound processes hold the cores
    python3 benchmarks/busy_host.py --out "$OUT/busy_host.jsonl" --cache "$CUDA_AGENT_CACHE" \
      --reps "${BUSY_REPS:-3}" 2>&1 | tee "$OUT/busy_host.log" || status=1
  fi
  if [[ $steps == *" stored "* ]]; then
    runs=$(mktemp -d)
    # The seven problems with fixture solutions, as one JSONL, so that one run (and one report)
    # holds them all: selecting by --levels and --ids would also take the other level's ids.
    python3 - "$runs/kernelbench_fixtures.jsonl" <<'PY' || status=1
import json, sys
from cuda_agent.task import load_tasks
want = {(1, 19), (1, 23), (1, 40), (1, 47), (2, 12), (2, 14), (2, 18)}
found = load_tasks("kernelbench", levels={1, 2}, problem_ids={p for _, p in want})
with open(sys.argv[1], "w") as fh:
    for t in found:
        if (t.level, t.source.problem_id) in want:
            row = {"level": t.level, "problem_id": t.source.problem_id,
                   "name": t.name.split("_", 1)[1], "code": t.code}
            fh.write(json.dumps(row) + "\n")
PY
    for set in builtin kernelbench; do
      tasks=builtin
      [ $set = kernelbench ] && tasks=$runs/kernelbench_fixtures.jsonl
      cli bench --tasks "$tasks" --solutions tests/fixtures/solutions --out "$runs/$set" \
        --gpus "${STORED_GPUS:-0,0,0}" 2>&1 | tee "$OUT/bench_$set.log" || status=1
    done
    tar -czf "$OUT/bench_runs.tar.gz" -C "$runs" builtin kernelbench
  fi
  if [[ $steps == *" service "* ]]; then
    python3 benchmarks/service_throughput.py --tasks builtin \
      --solutions tests/fixtures/solutions --repeat "${SERVICE_REPEAT:-1}" \
      --out "$OUT/service_throughput.jsonl" 2>&1 | tee "$OUT/service.log" || status=1
  fi
fi

if [ "$what" = synth ] || [ "$what" = all ]; then
  python3 benchmarks/synth_throughput.py --device cuda --workers "${SYNTH_WORKERS:-14}" \
    --candidates 300 --time-limit-s "${SYNTH_LIMIT_S:-255}" --out "$OUT/synth" 2>&1 \
    | grep -v '^\[transformers\]' | tee "$OUT/synth.log" || status=1
fi

if [ "$what" = kernelbench ] || [ "$what" = all ]; then
  # One inductor compile process per worker, so the worker that times finds a free core.
  export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
  sweep=$OUT/kernelbench_baselines.jsonl
  [ -n "${RESUME_DIR:-}" ] && cp "$RESUME_DIR/kernelbench_baselines.jsonl" "$sweep" 2>/dev/null
  # Eight workers audit and compile every task side by side, then take turns to time (a compile
  # holding the GPU's lock shared would keep a timer, and the workers queued behind it,
  # waiting). A task out of memory next to the others' big inputs is tried again alone on the
  # GPU; one that still fails, by a second pass with one worker.
  for gpus in "${SWEEP_GPUS:-0,0,0,0,0,0,0,0}" 0; do
    cli baselines --tasks kernelbench --gpus "$gpus" \
      --out "$sweep" 2>&1 | tee -a "$OUT/baselines.log" || status=1
  done
  if [ -f "$SHARED/kernelbench/README.md" ]; then  # the independent table of 12 problems
    python3 benchmarks/baselines_vs_shared.py --baselines "$sweep" \
      --readme "$SHARED/kernelbench/README.md" > "$OUT/baselines_vs_shared.md" || status=1
  fi
  if [ "${KB_AUDIT:-1}" = 1 ]; then  # KB_AUDIT=0: the baselines alone (a resumed sweep)
    cli audit --tasks kernelbench \
      --gpus "${SWEEP_GPUS:-0,0,0,0,0,0,0,0}" --out "$OUT/kernelbench_audit.jsonl" \
      2>&1 | tee "$OUT/audit.log" || status=1
  fi
fi
if [ "$what" = rl ]; then
  # veRL's stack from .whl/ (RL=1 scripts/fetch_gpu_wheels.sh): its wheels and Ray's packed tree
  # in one folder; then the gpu-marked RL tests (default tests/rl), among them the stages in order
  # on the tiny model
  if ! python3 -c "import verl, ray" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || status=1
    for packed in .whl/*.site.tar.xz; do tar -xJf "$packed" -C /tmp/site || status=1; done
    # byte-compiled once on every core: else each of a stage's dozen fresh processes (Ray's
    # workers, veRL's) compiles what the ones before it did not import, about 7 s for veRL alone
    python3 -m compileall -q -j 0 /tmp/site > /dev/null || :  # a file for another Python is no error
    export PYTHONPATH=/tmp/site:$PYTHONPATH
  fi
  # a fixed folder: a call cut short by its time limit is resumed by the next one on the same
  # machine (the stages recorded in run/pipeline.jsonl are skipped)
  rl=${RL_DIR:-/tmp/cuda-agent-rl}
  mkdir -p "$rl"
  rl_tests() {  # NAME PYTEST-ARGS...
    local name=$1
    shift
    CUDA_AGENT_RL_RUN=$rl/run python3 -m pytest -m gpu -p no:cacheprovider -q -rfE \
      --basetemp "$rl/tmp_$name" --junitxml "$rl/junit_$name.xml" "$@" \
      > "$rl/pytest_$name.log" 2>&1
  }
  if [ $# -gt 0 ]; then
    rl_tests selected "$@" || status=1
  else
    # The stages in order take most of the time and a few GiB of the GPU: the other RL tests
    # (each its own Ray instance) run beside them.
    rl_tests pipeline tests/rl/test_gpu_pipeline.py &
    pipeline=$!
    rl_tests others tests/rl --ignore=tests/rl/test_gpu_pipeline.py || status=1
    wait $pipeline || status=1
  fi
  tail -n 30 "$rl"/pytest_*.log
  tar -czf "$OUT/rl.tar.gz" -C "$rl" --exclude='*.pt' --exclude='*.safetensors' . || status=1
fi
exit $status
