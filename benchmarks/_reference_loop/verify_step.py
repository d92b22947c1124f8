"""CUDA-Agent-style verification: a fresh process, 5 checks of ModelNew against Model."""

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
torch.manual_seed(0)
ref = Model(*init).cuda()
new = mod.ModelNew(*init).cuda()
new.load_state_dict(ref.state_dict())
ok = True
with torch.no_grad():
    for seed in range(5):
        torch.manual_seed(seed)
        xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]
        ok &= torch.allclose(ref(*xs), new(*xs), atol=1e-2, rtol=1e-2)
print("correct" if ok else "mismatch")
