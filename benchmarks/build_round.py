"""Time the build steps of one edit round: cold, one kernel edited, one binding edited, no-op.

    python benchmarks/build_round.py [--solution DIR] [--repeats 3] [--out build_round.json]

Without --solution a small vector-add solution is used. Each cold build
starts from an empty cache; "cold (pch warm)" gets only the precompiled header, hard-linked from
the first cache, so the two cold rows differ by the header's build. Edits append a comment line
to the first kernels/*.cu or kernels/*.cpp, which changes its hash and nothing else; one binding
edit is also built without the precompiled header, for comparison. Works with or without a GPU
(compile-only where torch's CUDA libraries are absent).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cuda_agent.sandbox.build.extension import BuildResult, build_extension
from cuda_agent.sandbox.build.toolchain import find_toolchain
from cuda_agent.sandbox.workspace import Solution, read_solution, solution_from_files

VECTOR_ADD = {
    "model_new.py": (
        "import torch.nn as nn\n\nimport cuda_extension\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, a, b):\n        return cuda_extension.vector_add(a, b)\n"
    ),
    "kernels/vector_add.cu": """#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* a, const float* b, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" cudaError_t vector_add_launch(const float* a, const float* b, float* out, long n,
                                         cudaStream_t stream) {
    long blocks = (n + 255) / 256;
    if (blocks > 0) vector_add_kernel<<<blocks, 256, 0, stream>>>(a, b, out, n);
    return cudaGetLastError();
}
""",
    "kernels/vector_add_binding.cpp": """#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" cudaError_t vector_add_launch(const float* a, const float* b, float* out, long n,
                                         cudaStream_t stream);

torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.sizes() == b.sizes(), "two CUDA tensors");
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "contiguous inputs");
    auto out = torch::empty_like(a);
    cudaError_t err = vector_add_launch(a.data_ptr<float>(), b.data_ptr<float>(),
                                        out.data_ptr<float>(), a.numel(),
                                        c10::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "vector_add failed: ", cudaGetErrorString(err));
    return out;
}

REGISTER_BINDING(vector_add, vector_add);
""",
}


def edited(solution: Solution, suffix: str, n: int) -> Solution:
    """The solution with a comment appended to its first kernels/*<suffix> file."""
    files = dict(solution.files)
    target = next((p for p in sorted(files) if p.endswith(suffix)), None)
    if target is None:
        raise SystemExit(f"the solution has no kernels/*{suffix} file to edit")
    files[target] += f"\n// edit {n}\n"
    return solution_from_files(files)


def row(step: str, result: BuildResult, seconds: float, cpu: float) -> dict:
    if not result.ok:
        raise SystemExit(f"{step}: the build failed\n{result.log}")
    return {
        "step": step,
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu, 3),
        "compiled": result.compiled,
        "reused": result.reused,
        "linked": result.linked,
        "pch": result.pch,
        "steps": result.seconds,
    }


def timed(step: str, solution: Solution, toolchain, cache: Path, use_pch: bool = True) -> dict:
    start, cpu = time.perf_counter(), _children_cpu()
    result = build_extension(solution, toolchain, cache, use_pch=use_pch)
    return row(step, result, time.perf_counter() - start, _children_cpu() - cpu)


def _children_cpu() -> float:
    """CPU seconds of finished compiler processes: comparable on a loaded machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def link_tree(src: Path, dst: Path) -> None:
    """Hard-link a folder (the 0.7 GB precompiled header) instead of copying it."""
    shutil.copytree(src, dst, copy_function=os.link)


def run(solution: Solution, repeats: int, work: Path) -> dict:
    start = time.perf_counter()
    toolchain = find_toolchain()
    found = time.perf_counter() - start
    cold, warm = work / "cold", work / "warm"
    rows = [timed("cold (pch built too)", solution, toolchain, cold)]
    link_tree(cold / "pch", warm / "pch")
    rows.append(timed("cold (pch warm)", solution, toolchain, warm))
    for n in range(repeats):
        rows.append(timed("edit one .cu", edited(solution, ".cu", n), toolchain, warm))
    for n in range(repeats):
        rows.append(timed("edit one binding", edited(solution, ".cpp", n), toolchain, warm))
    no_pch = edited(solution, ".cpp", repeats)
    rows.append(timed("edit one binding, no pch", no_pch, toolchain, warm, use_pch=False))
    for _ in range(repeats):
        rows.append(timed("no-op rebuild", solution, toolchain, warm))
    medians = {
        step: round(statistics.median(r["seconds"] for r in rows if r["step"] == step), 3)
        for step in dict.fromkeys(r["step"] for r in rows)
    }
    return {
        "machine": {
            "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": toolchain.torch_version, "nvcc": toolchain.nvcc_version,
            "cxx": toolchain.cxx_version, "arch": toolchain.arch, "can_link": toolchain.can_link,
        },
        "find_toolchain_s": round(found, 3),
        "medians": medians,
        "rows": rows,
    }  # fmt: skip


def print_table(report: dict) -> None:
    machine = report["machine"]
    print(f"{machine['cpus']} CPUs, torch {machine['torch']}, nvcc {machine['nvcc']}, "
          f"{machine['arch']}, {'links' if machine['can_link'] else 'compile-only'}")  # fmt: skip
    print(f"find_toolchain: {report['find_toolchain_s']:.2f} s")
    print(f"{'step':<26} {'wall s':>7} {'cpu s':>7} {'pch s':>6} {'link s':>6}  compiled")
    for r in report["rows"]:
        pch = f"{r['steps']['pch']:.1f}" if "pch" in r["steps"] else "-"
        link = f"{r['steps']['link']:.2f}" if "link" in r["steps"] else "-"
        compiled = ", ".join(r["compiled"]) or "(nothing)"
        times = f"{r['seconds']:>7.2f} {r['cpu_s']:>7.1f} {pch:>6} {link:>6}"
        print(f"{r['step']:<26} {times}  {compiled}")
    print("medians: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["medians"].items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solution", type=Path, help="a solution folder (default: vector add)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per edit kind")
    parser.add_argument("--out", type=Path, help="write the report here as JSON")
    args = parser.parse_args(argv)
    solution = read_solution(args.solution) if args.solution else solution_from_files(VECTOR_ADD)
    with tempfile.TemporaryDirectory(prefix="build-round-") as work:
        report = run(solution, max(1, args.repeats), Path(work))
    report["solution"] = str(args.solution or "vector add (built in)")
    print_table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
