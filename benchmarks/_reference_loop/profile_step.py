"""CUDA-Agent-style profiling: a fresh process; eager, torch.compile (compiled anew) and the
extension, 5 warm-up and 10 timed calls each on one input set, CUDA events."""

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import torch

work, build = Path(sys.argv[1]), Path(sys.argv[2])
sys.path[:0] = [str(build), str(work)]
import cuda_extension  # noqa: E402,F401
from model import Model, get_init_inputs, get_inputs  # noqa: E402

spec = importlib.util.spec_from_file_location("model_new", work / "model_new.py")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
init = get_init_inputs()
ref = Model(*init).cuda()
new = mod.ModelNew(*init).cuda()
new.load_state_dict(ref.state_dict())
compiled = torch.compile(ref)
xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]


def bench(fn):
    with torch.no_grad():
        for _ in range(5):
            fn(*xs)
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*xs)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
    return statistics.median(times)


print(
    json.dumps({"eager_ms": bench(ref), "compile_ms": bench(compiled), "candidate_ms": bench(new)})
)
