"""Small hand-written programs the filter and label tests run (each a KernelBench program), and
the composer alone in a child."""

TAIL = """

def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""


def program(forward: str, inputs: str = "torch.randn(32, 64)", init: str = "pass",
            head: str = "") -> str:  # fmt: skip
    """A program whose forward body is `forward` (indented by the caller's lines)."""
    body = "\n".join(f"        {line}" for line in forward.strip().splitlines())
    setup = "\n".join(f"        {line}" for line in init.strip().splitlines())
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + head + "\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"{setup}\n\n    def forward(self, x):\n{body}\n" + TAIL.format(inputs=inputs)
    )


GOOD = program(
    init="self.lin = nn.Linear(64, 128)",
    forward="""
x = self.lin(x)
x = F.gelu(x)
if x.shape[0] < 0:
    x = torch.relu(x)  # never runs: no label
x = x + 1.0
x = getattr(torch, "tanh")(x)
return torch.sum(x, dim=-1)
""",
)
GOOD_LABELS = ["torch.nn.Linear", "torch.nn.functional.gelu", "torch.add", "torch.tanh",
               "torch.sum"]  # fmt: skip

HF_BLOCK = program(
    head="from transformers.models.llama.configuration_llama import LlamaConfig\n"
    "from transformers.models.llama.modeling_llama import LlamaMLP",
    init="self.mlp = LlamaMLP(LlamaConfig(hidden_size=64, intermediate_size=96))",
    forward="return torch.softmax(self.mlp(x), dim=-1)",
    inputs="torch.randn(2, 16, 64)",
)

STOCHASTIC = program("return F.dropout(x, p=0.5, training=True)")
CONSTANT = program("return torch.zeros_like(x) + 1.0")
NONFINITE = program("return torch.log(x - 100.0)")
DEGENERATE = program("return x * 1e-6")
INDISTINGUISHABLE = program("return torch.ones_like(x) + x * 1e-5")


def compose_batch(catalog_path: str, seed: int, ids: list[int], device: str) -> list[dict]:
    """Compose candidates `ids` (one record each), as the template composer does in a batch
    child, without the filters; run it in an isolated child (it executes programs)."""
    import warnings

    import torch

    from cuda_agent.synth.compose import compose_record, load_composer

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    composer = load_composer(catalog_path, device)
    return [compose_record(composer, seed, index) for index in ids]
