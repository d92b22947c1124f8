"""Forms that model-written KernelBench files use honestly, read by the static guard without a
GPU: each passes, and the cheat that hides in the same form is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.guard import check_call, check_file

HERE = Path(__file__).parent
BASE = (HERE / "honest" / "strings" / "model_new.py").read_text()
INIT = "        self.ext = scale_gelu_ext\n"
FORWARD = "        return self.ext.scale_gelu(x, self.scale)\n"
RESET = "\n    def reset(self):\n        self.scale = torch.relu(torch.ones(1)).item()\n"


def violations(text: str) -> list[str]:
    found = check_file("model_new.py", text, "ModelNew")
    for call in literal_calls(text):
        found += check_call(call)
    return found


def variant(init: str = "", forward: str = "", methods: str = "", after: str = "") -> str:
    """The honest `strings` file with lines added to __init__, forward (before its return), the
    class, and the module's end."""
    text = BASE.replace(INIT, INIT + init).replace(FORWARD, forward + FORWARD)
    return text + methods + after


def test_the_base_file_is_clean():
    assert violations(BASE) == []


HONEST = {
    "get_inputs never called": variant(
        after="\n\ndef get_inputs():\n    return [torch.randn(16, 1024)]\n\n\n"
        "def get_init_inputs():\n    return [torch.rand(1).item()]\n"
    ),
    "an extension function kept on self under a tensor method's name": BASE.replace(
        INIT, "        self.matmul = scale_gelu_ext.scale_gelu\n"
    ).replace(FORWARD, "        return self.matmul(x, self.scale)\n"),
    "an nn class named, not built": variant(
        init="        self.norm_type = nn.LayerNorm\n",
        forward="        assert not isinstance(self.ext, nn.Conv2d)\n",
    ).replace(
        "def __init__(self, scale: float):", "def __init__(self, scale: float, act=nn.GELU):"
    ),
    "parameters set up in a method only __init__ calls": variant(
        init="        self.weight = nn.Parameter(torch.empty(4, 4))\n"
        "        self.reset_parameters()\n",
        methods="\n    def reset_parameters(self):\n"
        "        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))\n",
    ).replace("import torch\n", "import math\n\nimport torch\n", 1),
    "a held module's weights read by name": variant(
        init="        self.rnn = nn.GRU(4, 4, num_layers=2)\n",
        forward='        ws = [getattr(self.rnn, f"weight_ih_l{k}") for k in range(2)]\n'
        '        ready = hasattr(self, "ext") and len(ws) == 2\n',
    ),
    "a constant-filled buffer and a 3-d memory format": variant(
        forward="        m = torch.full((4,), -float('inf'), device=x.device)\n"
        "        o = torch.ones_like(m)\n"
        "        z = torch.empty((1, 1, 1, 1, 1), memory_format=torch.channels_last_3d)\n",
    ),
    "standard-library helpers": variant(
        after="\n\nimport collections.abc\nfrom itertools import repeat\n\n\n"
        "def pair(v):\n"
        "    return v if isinstance(v, collections.abc.Iterable) else tuple(repeat(v, 2))\n",
    ),
    "the process id in the extension's name": BASE.replace(
        'name="scale_gelu_ext",', 'name=f"scale_gelu_ext_{os.getpid()}",'
    ).replace("import torch\n", "import os\n\nimport torch\n", 1),
    "a running maximum filled in the wrapper": BASE.replace(
        "auto y = torch::empty_like(xc);",
        "auto y = torch::empty_like(xc);\n"
        "    auto m = torch::full({1}, -INFINITY, xc.options());\n"
        "    auto c = torch::ones({1}, xc.options());",
    ),
}


@pytest.mark.parametrize("text", HONEST.values(), ids=HONEST.keys())
def test_honest_form_passes(text):
    assert violations(text) == []


CHEATS = {
    "a helper that forward calls computes with torch": (
        variant(
            forward="        x = helper(x)\n",
            after="\n\ndef helper(t):\n    return torch.relu(t)\n",
        ),
        "calls torch.relu",
    ),
    "a decorator on a function never called still runs": (
        variant(after="\n\n@torch.compile\ndef get_inputs():\n    return []\n"),
        "torch.compile",
    ),
    "a method __init__ calls that forward calls too": (
        variant(
            init="        self.reset()\n",
            forward="        self.reset()\n",
            methods=RESET,
        ),
        "calls torch.relu",
    ),
    "a method __init__ hands out instead of calling": (
        variant(
            init="        self.later = self.reset\n        self.reset()\n",
            methods=RESET,
        ),
        "calls torch.relu",
    ),
    "an nn module built in forward": (
        variant(forward="        x = nn.GELU()(x)\n"),
        "builds torch.nn.GELU outside __init__",
    ),
    "getattr on torch": (variant(forward='        x = getattr(torch, "relu")(x)\n'), "getattr"),
    "getattr on the module itself": (
        variant(forward='        f = getattr(self, "ext")\n'),
        "getattr",
    ),
    "setattr on the module": (variant(forward='        setattr(self, "scale", 2.0)\n'), "setattr"),
    "a class patched through type()": (
        variant(forward="        type(x).__eq__ = lambda a, b: True\n"),
        "monkey-patching",
    ),
    "a process started through os": (
        BASE.replace("import torch\n", "import os\n\nimport torch\n", 1).replace(
            FORWARD, '        os.system("true")\n' + FORWARD
        ),
        "os.system",
    ),
    "a cast to half through .to()": (
        variant(forward="        x = x.to(torch.float16)\n"),
        ".to()",
    ),
}


@pytest.mark.parametrize("text, says", CHEATS.values(), ids=CHEATS.keys())
def test_the_cheat_in_the_same_form_is_refused(text, says):
    found = violations(text)
    assert any(says in v for v in found), found
