"""What a submission's text says about Triton, read without Triton installed: whether the file
uses it, which of its functions are @triton.jit kernels, and that a Triton file is scored."""

from __future__ import annotations

import pytest

from cuda_agent.sandbox.single_file.submission import (
    is_triton,
    problem,
    single_file_solution,
)
from cuda_agent.sandbox.single_file.triton_source import triton_kernel_names

KERNEL_BODY = "    pass\n"


@pytest.mark.parametrize(
    "text",
    [
        "import triton\n",
        "import triton.language as tl\n",
        "import torch, triton\n",
        "from triton import cdiv\n",
        "from triton.language.extra import libdevice\n",
        "if True:\n    import triton\n",
        f"@triton.jit\ndef k(x):\n{KERNEL_BODY}",
    ],
)
def test_a_file_that_imports_triton_or_defines_a_kernel_is_triton(text):
    assert is_triton(text)


@pytest.mark.parametrize(
    "text",
    [
        "import torch\n",
        "import tritonclient\n",
        "# import triton\n",
        'NOTE = "@triton.jit"\n',
        "import triton\ndef broken(:\n",  # does not parse: scored invalid before this is asked
    ],
)
def test_a_file_that_only_mentions_triton_is_not(text):
    assert not is_triton(text)


def test_kernels_are_the_module_level_functions_decorated_with_triton_jit():
    text = f"""
import triton
import triton as tr
from triton import jit
from triton import jit as compile_me

@triton.jit
def plain(x):
{KERNEL_BODY}
@triton.jit(do_not_specialize=["n"])
def called(x, n):
{KERNEL_BODY}
@triton.autotune(configs=[triton.Config({{"B": 64}})], key=["n"])
@triton.heuristics({{"EVEN": lambda args: args["n"] % 64 == 0}})
@triton.jit
def stacked(x, n):
{KERNEL_BODY}
@tr.jit
def through_module_alias(x):
{KERNEL_BODY}
@jit
def imported(x):
{KERNEL_BODY}
@compile_me
def imported_as(x):
{KERNEL_BODY}
@triton.autotune(configs=[], key=[])
def tuned_only(x):
{KERNEL_BODY}
def helper(x):
    @triton.jit
    def nested(y):
        pass
class Holder:
    @triton.jit
    def method(x):
        pass
"""
    assert triton_kernel_names(text) == {
        "plain", "called", "stacked", "through_module_alias", "imported", "imported_as",
    }  # fmt: skip


def test_a_file_that_does_not_parse_has_no_kernels():
    assert triton_kernel_names("@triton.jit\ndef k(:\n") == frozenset()


def test_a_triton_file_is_scored():
    text = "import triton\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    assert problem(single_file_solution(text)) is None
