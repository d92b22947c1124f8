"""CUDA-Agent-style verification: a fresh process, 5 checks of ModelNew against Model, each on
newly drawn inputs (the extension's a clone), compared by torch.testing at atol = rtol = 1e-2."""

import importlib.util
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
ref = Model(*init).eval().cuda()
new = mod.ModelNew(*init).eval().cuda()
new.load_state_dict(ref.state_dict())
ok = True
with torch.no_grad():
    for _ in range(5):
        xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]
        clones = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
        expected, actual = ref(*xs), new(*clones)
        try:
            torch.testing.assert_close(actual, expected, atol=1e-2, rtol=1e-2, equal_nan=True)
        except AssertionError:
            ok = False
print("correct" if ok else "mismatch")
