"""Stage 1's answer format: the prompt, and the solution read back from untidy responses."""

from __future__ import annotations

from cuda_agent.agent import skill_text
from cuda_agent.rl import extract_files, extract_solution, single_turn_messages
from cuda_agent.task import load_task

ENTRY = "import torch.nn as nn\nimport cuda_extension\n\n\nclass ModelNew(nn.Module):\n    pass\n"
KERNEL = '__global__ void k(float* x) { x[0] = 1.0f; }\nextern "C" void k_launch(float* x) {}\n'


def test_prompt_has_the_guide_the_task_and_the_format():
    task = load_task("rmsnorm")
    system, user = single_turn_messages(task, skill_text())
    assert system["role"] == "system" and "REGISTER_BINDING" in system["content"]
    assert user["role"] == "user" and task.code.strip() in user["content"]
    assert "### model_new.py" in user["content"] and "fenced code block" in user["content"]


def test_paths_from_headings_info_strings_comments_and_class_name():
    response = (
        "Let me think.\n\n### kernels/relu.cu\n```cuda\n" + KERNEL + "```\n\n"
        "```cpp kernels/relu_binding.cpp\n#include <torch/extension.h>\n```\n\n"
        "```cuda\n// kernels/extra.cuh\n#pragma once\n```\n\n"
        "**kernels/helper.h**\n```\nint helper();\n```\n\n"
        "Now update kernels/tail.cu to finish:\n```cuda\nvoid tail() {}\n```\n\n"
        "And the module:\n```python\n" + ENTRY + "```\n"
    )
    files = extract_files(response)
    assert files == {
        "kernels/relu.cu": KERNEL,
        "kernels/relu_binding.cpp": "#include <torch/extension.h>\n",
        "kernels/extra.cuh": "#pragma once\n",
        "kernels/helper.h": "int helper();\n",
        "kernels/tail.cu": "void tail() {}\n",
        "model_new.py": ENTRY,
    }
    solution = extract_solution(response).solution
    assert solution is not None and sorted(solution.files) == sorted(files)


def test_final_answer_wins_and_reasoning_and_cut_blocks_are_ignored():
    response = (
        "<think>\n### model_new.py\n```python\nclass ModelNew: draft\n```\n</think>\n"
        "### model_new.py\n```python\nclass ModelNew: first\n```\n"
        "Better:\n### model_new.py\n```python\nclass ModelNew: second\n```\n"
        "### kernels/cut.cu\n```cuda\n__global__ void never_closed("
    )
    assert extract_files(response) == {"model_new.py": "class ModelNew: second\n"}


def test_junk_gives_a_reason_not_a_solution():
    cases = {
        "I cannot do this.": "no fenced code block",
        "```python\nprint('hello')\n```": "no fenced code block",
        "### kernels/a.cu\n```cuda\nvoid a() {}\n```": "missing model_new.py",
        "### kernels/../../etc/x.cu\n```cuda\nx\n```\n"
        "### model_new.py\n```python\nclass ModelNew: pass\n```": "not a solution file",
    }
    for response, reason in cases.items():
        found = extract_solution(response)
        assert found.solution is None and reason in found.error, (response, found.error)


def test_unnamed_blocks_that_are_not_the_entry_are_skipped():
    response = (
        "```bash\nnvcc --version\n```\n```python\nimport torch\n```\n```python\n" + ENTRY + "```"
    )
    assert extract_files(response) == {"model_new.py": ENTRY}
