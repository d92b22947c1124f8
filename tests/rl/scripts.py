"""The scripted episodes the RL tests replay through veRL and the sampler: each reply written the
way the tiny model's chat template renders an assistant turn (so a replayed trajectory gives back
the very tokens of the rollout)."""

from __future__ import annotations

import json

from tests.rl.evaluators import FAST

SUCCESS, STUCK, SINGLE = "rmsnorm", "scaled_softmax", "row_sum_squares"
BUDGET = "swiglu_mlp"  # its first observation overruns the response budget


def reply(content: str, *calls: tuple[str, dict]) -> str:
    """A reply as the chat template renders one: content, then <tool_call> blocks, then EOS."""
    blocks = "".join(
        "\n<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"
        for name, args in calls
    )
    return content + blocks + "<|im_end|>"


FAST_CODE = f"{FAST}\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    pass\n"
SCRIPTS = {
    SUCCESS: [
        reply(
            "I write the kernel.", ("write_file", {"path": "model_new.py", "content": FAST_CODE})
        ),
        reply("Now I time it.", ("profile", {})),
        reply("Done.", ("submit", {})),
    ],
    STUCK: [
        '<tool_call>\n{"name": "write_file", "arguments": {"path": </tool_call><|im_end|>',
        "Let me think about the reduction first.<|im_end|>",
        reply(
            "Two calls at once.",
            (
                "write_file",
                {"path": "model_new.py", "content": "# correct\nclass ModelNew: pass\n"},
            ),
            ("verify", {}),
        ),
    ],
    BUDGET: [
        reply(
            "Let me read the guide and the reference.",
            ("read_file", {"path": "SKILL.md"}),
            ("read_file", {"path": "model.py"}),
        )
    ],
    SINGLE: [
        "Here it is.\n\n### model_new.py\n```python\n" + FAST_CODE + "```\n<|im_end|>",
    ],
}
