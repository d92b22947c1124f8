"""Stage 1 (single-turn warm-up): the prompt, and the Solution read back from one response.

The model gets the task and SKILL.md and must answer, in one reply, with every file of its
solution as a fenced code block that names its path:

    ### model_new.py
    ```python
    ...
    ```

Responses are untidy, so a block's path is taken from the first place that names one: the info
string (```cuda kernels/add.cu), the line just before the fence (`kernels/add.cu:`,
`**kernels/add.cu**`, `### File: kernels/add.cu`), or a path comment on the block's first line
(`// kernels/add.cu`). An unnamed Python block defining `class ModelNew` is model_new.py. A
later block for the same path replaces an earlier one (the model's final answer wins), reasoning
inside <think>...</think> is ignored, and an unterminated last block (a reply cut at the token
limit) is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuda_agent.errors import UserError
from cuda_agent.sandbox import Solution, solution_from_files
from cuda_agent.task import Task

ENTRY = "model_new.py"
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n`]*)$", re.MULTILINE)
_PATH = re.compile(r"(model_new\.py|kernels/[\w./-]+\.(?:cu|cuh|cpp|h|hpp))")
_LABEL_LINE = re.compile(
    r"^[\s#>*_`-]*(?:file(?:name)?\s*:?\s*)?([\w./-]+)[\s*_`:]*$", re.IGNORECASE
)
_COMMENT_LINE = re.compile(
    r"^\s*(?://|#|/\*)\s*(?:file(?:name)?\s*:?\s*)?([\w./-]+)\s*(?:\*/)?\s*$"
)

SYSTEM = (
    "You are an expert CUDA engineer. You make PyTorch programs faster by replacing their "
    "computation with your own CUDA kernels. Here is the guide to the workspace your answer is "
    "built in, SKILL.md:\n\n"
)
ANSWER_FORMAT = (
    "Answer in one reply, without tools: give every file of your solution (model_new.py and the "
    "files under kernels/) as a fenced code block, each under a line naming its path, e.g.\n\n"
    "### kernels/my_op.cu\n```cuda\n...\n```\n\n### model_new.py\n```python\n...\n```\n\n"
    "Your solution is built, checked for correctness against the reference and timed against "
    "eager PyTorch and torch.compile; it must be correct and should be faster than both."
)


def single_turn_messages(task: Task, skill: str) -> list[dict]:
    """The chat prompt of a stage-1 episode: SKILL.md as the system prompt, then the task."""
    user = (
        f"Task `{task.name}`: write a faster CUDA implementation of this reference program "
        f"(model.py):\n\n```python\n{task.code.rstrip()}\n```\n\n{ANSWER_FORMAT}"
    )
    return [
        {"role": "system", "content": SYSTEM + skill.strip()},
        {"role": "user", "content": user},
    ]


@dataclass(frozen=True)
class Extraction:
    """The solution found in a response, or why there is none (`error`, one line)."""

    solution: Solution | None
    error: str | None = None


def extract_files(response: str) -> dict[str, str]:
    """Every named solution file in `response` (path -> text); unnamed and junk blocks skipped."""
    text = _THINK.sub("", response)
    files: dict[str, str] = {}
    for label_before, info, body in _blocks(text):
        path = _path_of(info, label_before, body)
        if path is not None:
            files[path] = _strip_path_comment(body, path)
    return files


def extract_solution(response: str) -> Extraction:
    """The Solution a single response holds, validated like any solution folder."""
    files = extract_files(response)
    if not files:
        return Extraction(None, "no fenced code block naming model_new.py or a kernels/ file")
    try:
        return Extraction(solution_from_files(files, where="response"))
    except UserError as err:
        return Extraction(None, str(err))


def _blocks(text: str):
    """(line before the fence, info string, body) of each closed fenced block."""
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        opening = fences[i]
        marker = opening.group(1)
        closing = next(
            (
                j
                for j in range(i + 1, len(fences))
                if fences[j].group(1)[0] == marker[0]
                and len(fences[j].group(1)) >= len(marker)
                and not fences[j].group(2).strip()
            ),
            None,
        )
        if closing is None:
            return  # unterminated: the reply was cut off
        body = text[opening.end() + 1 : fences[closing].start()]
        before = text[: opening.start()].rstrip("\n").rsplit("\n", 1)[-1]
        yield before, opening.group(2).strip(), body
        i = closing + 1


def _path_of(info: str, before: str, body: str) -> str | None:
    found = _PATH.search(info)
    if found:
        return found.group(1)
    named = _PATH.findall(before)
    if len(set(named)) == 1 and (_LABEL_LINE.match(before) or before.rstrip().endswith(":")):
        return named[0]
    first = body.lstrip("\n").split("\n", 1)[0]
    comment = _COMMENT_LINE.match(first)
    if comment and _PATH.fullmatch(comment.group(1)):
        return comment.group(1)
    language = info.split()[0].lower() if info else ""
    if language in ("", "python", "py") and re.search(r"^class ModelNew\b", body, re.MULTILINE):
        return ENTRY
    return None


def _strip_path_comment(body: str, path: str) -> str:
    """The body without a leading comment that only names its own path."""
    lines = body.split("\n")
    comment = _COMMENT_LINE.match(lines[0]) if lines else None
    if comment and comment.group(1) == path:
        lines = lines[1:]
    return "\n".join(lines).rstrip() + "\n"
