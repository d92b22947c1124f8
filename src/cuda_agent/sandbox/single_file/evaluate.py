"""The stages of one single-file evaluation, up to where they join the workspace's.

Whether the file can be scored at all (empty, syntax, no entry point: `invalid`), the
static guard on its Python, then either the candidate's process on the GPU (the environment's
own verify and profile, with this evaluation's ExtensionBuilder answering the builds) or, at the
compile stage and on a machine without a GPU, the import and construction in a confined child on
the CPU (compile_stage.py).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import time
import uuid
from collections.abc import Callable

from cuda_agent.sandbox.build.toolchain import Toolchain
from cuda_agent.sandbox.check.inputs import init_inputs, load_program, secret_seed
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.outcome import Compiled, Failure, Head, to_verdict
from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.compile_stage import compile_in_child
from cuda_agent.sandbox.single_file.extensions import ExtensionBuilder
from cuda_agent.sandbox.single_file.guard import file_findings, lazy_in_forward
from cuda_agent.sandbox.single_file.submission import (
    ENTRY_POINT,
    SingleFileSolution,
    is_triton,
    missing_entry,
    problem,
)
from cuda_agent.sandbox.verdict import Stage, Status, Verdict
from cuda_agent.sandbox.workspace import ENTRY
from cuda_agent.task import Task

_GPU_ONLY_HEADERS = re.compile(r"(cublas\w*|cudnn\w*|cusparse\w*|cusolver\w*)\.h: No such file")
_NOT_BUILT = (Status.COMPILE_ERROR, Status.VIOLATION, Status.INVALID)


def evaluate_single_file(
    task: Task,
    solution: SingleFileSolution,
    stage: Stage,
    head: Head,
    config: EnvConfig,
    toolchain: Callable[[], Toolchain],
    has_gpu: bool,
    run_on_gpu: Callable[[ExtensionBuilder], Verdict],
) -> Verdict:
    seconds = head.seconds
    why = problem(solution)
    if why is not None:
        return to_verdict(head, Failure(Status.INVALID, why), False)
    start = time.perf_counter()
    judged = judge(file_findings(ENTRY, solution.source, solution.entry_point), config.rules)
    head.list_ops(judged.torch_ops)
    seconds["guard"] = time.perf_counter() - start
    if judged.violations:
        message = "the static guard rejected the submission (see violations)"
        return to_verdict(head, Failure(Status.VIOLATION, message, judged.violations), False)
    why = missing_entry(solution)
    if why is not None:
        return to_verdict(head, Failure(Status.INVALID, why), False)
    if is_triton(solution.source) and importlib.util.find_spec("triton") is None:
        message = (
            "a Triton submission: the static guard passed, but this machine has no triton "
            "package (it comes with PyTorch's CUDA builds); Triton compiles the kernels when "
            "forward first runs on a GPU"
        )
        status = Status.HARNESS_ERROR if has_gpu else Status.NO_GPU
        return to_verdict(head, Failure(status, message), False)
    if solution.entry_point != ENTRY_POINT:
        head.notes.append(f"scored the file's class {solution.entry_point} as its entry point")
    builder = ExtensionBuilder(
        toolchain(), config.cache_dir, config.build_timeout_s, head.notes, config.rules,
        head.torch_ops,
    )  # fmt: skip
    builder.ahead(literal_calls(solution.source))  # built while the process starts
    try:
        if has_gpu and stage != Stage.COMPILE:
            verdict = run_on_gpu(builder)
            seconds = {**verdict.seconds, "build": builder.seconds}
            triton = builder.triton_note()
            notes = [*verdict.notes, triton] if triton else verdict.notes
            return verdict.model_copy(update={"seconds": seconds, "notes": notes})
        return _compile_stage(task, solution, stage, head, config, builder, has_gpu)
    finally:
        builder.finish()


def _compile_stage(task, solution, stage, head, config, builder, has_gpu: bool) -> Verdict:
    """Import and construct on the CPU; stage compile ends here, any later stage with no_gpu
    (this runs for those only on a machine without a GPU)."""
    program = load_program(task.code, f"reference_{task.hash}")  # the task's trusted code
    inits = init_inputs(program, secret_seed())
    workdir = config.cache_dir / "runs" / uuid.uuid4().hex
    start = time.perf_counter()
    try:
        result = compile_in_child(
            solution.source, solution.entry_point, inits, builder, workdir,
            config.child_timeout_s, config.child_memory_mb,
        )  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    head.seconds["build"] = builder.seconds
    head.seconds["import"] = time.perf_counter() - start - builder.seconds
    if isinstance(result, Failure) and not has_gpu and _GPU_ONLY_HEADERS.search(result.message):
        message = (
            "compile-only check incomplete: the sources include CUDA library headers (cuBLAS, "
            "cuSPARSE, cuDNN; ATen/cuda/CUDAContext.h brings them) that this machine without a "
            f"GPU toolkit lacks; correctness and timing need a CUDA GPU\n{result.message}"
        )
        return to_verdict(head, Failure(Status.NO_GPU, message), False)
    if isinstance(result, Failure):
        built = bool(builder.compiled or builder.reused) and result.status not in _NOT_BUILT
        return to_verdict(head, result, built)
    parts = [builder.summary()]
    if result.stopped:
        parts.append(f"construction stopped where it called an extension ({result.stopped})")
    if is_triton(solution.source):
        parts.append(
            "Triton compiles the file's kernels when forward first runs, on a GPU: not checked here"
        )
    if lazy_in_forward(solution.source, solution.entry_point):
        parts.append(
            "forward builds an extension itself: that build happens when forward first runs, "
            "on a GPU, and was not checked here"
        )
    summary = "; ".join(parts)
    if stage == Stage.COMPILE:
        return to_verdict(head, Compiled(f"{summary}; verify checks correctness"), True)
    message = (
        f"{summary} (compile-only: no GPU on this machine); correctness and timing need a CUDA GPU"
    )
    return to_verdict(head, Failure(Status.NO_GPU, message), True)
