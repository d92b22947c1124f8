"""The load_inline calls a submission's text fixes: read without running the file, equal to the
calls its process makes, and nothing read where the text does not fix the value (or fixing it
would run lookups or build huge strings in the harness's process)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch.utils.cpp_extension as cpp_extension

from cuda_agent.sandbox.process.messages import ExtensionBuilt
from cuda_agent.sandbox.single_file import hook
from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.submission import detected_entry_point

HERE = Path(__file__).parent
REPO = HERE.parents[2]
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
# the forms whose calls are made at import or in the constructor, from literal sources
LITERAL = [p for p in HONEST if p.name not in ("load_files", "lazy_forward")]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("folder", LITERAL, ids=[p.name for p in LITERAL])
def test_the_calls_read_are_the_calls_the_process_makes(folder, monkeypatch):
    # torch's builders are put back after the test: the hook replaces them in this process
    monkeypatch.setattr(cpp_extension, "load_inline", cpp_extension.load_inline)
    monkeypatch.setattr(cpp_extension, "load", cpp_extension.load)
    made = []

    def ask(call):
        made.append(call)
        return ExtensionBuilt(so_path=None, module_name=f"unlinked_{len(made)}")

    hook.install(ask)
    module = _module(folder / "model_new.py", f"submission_{folder.name}")
    task = json.loads((folder / "expect.json").read_text())["task"]
    source = (folder / "model_new.py").read_text()
    entry = getattr(module, detected_entry_point(source))  # ModelNew, or a file's lone Model
    entry(*_module(REPO / task, f"task_{folder.name}").get_init_inputs())
    read = literal_calls(source)
    assert made and read == list(dict.fromkeys(made))


def _one(source: str):
    calls = literal_calls(source)
    return calls[0] if calls else None


HEAD = "from torch.utils.cpp_extension import load_inline\n"


def test_strings_names_fstrings_format_join_and_dedent_are_read():
    call = _one(
        HEAD
        + "import textwrap\n"
        + "BLOCK = 128\n"
        + "body = f'const int block = {BLOCK:>4};'\n"
        + "kernel = textwrap.dedent('''\n    __global__ void k() {{ {} }}\n''').format(body)\n"
        + "decl = '\\n'.join(['void k_launch();', 'int other();'])\n"
        + "ext = load_inline('ext', decl, cuda_sources=[kernel + '// end'], "
        + "functions={'k_launch': 'doc'}, extra_cuda_cflags=['-O3'])\n"
    )
    assert call is not None
    assert call.cuda_sources == ("\n__global__ void k() { const int block =  128; }\n// end",)
    assert call.cpp_sources == ("void k_launch();\nint other();",)
    assert call.functions == (("k_launch", "doc"),) and call.extra_cuda_cflags == ("-O3",)


def test_a_call_inside_a_method_reads_the_methods_own_names():
    call = _one(
        HEAD + "class ModelNew:\n    def __init__(self):\n        src = 'int f();'\n"
        "        self.ext = load_inline(name='e', cpp_sources=src, functions=['f'])\n"
    )
    assert call is not None and call.cpp_sources == ("int f();",)


@pytest.mark.parametrize(
    "body",
    [
        "src = 'a'\nsrc = 'b'\n",  # bound twice: which one is used depends on running the file
        "src = 'a'\nsrc += 'b'\n",
        "for src in ['a', 'b']:\n    pass\n",
        "import os\nsrc = os.environ['SRC']\n",  # a value only running the file gives
        "src = '{0.__class__}'.format('x')\n",  # a lookup in the harness's process
        "src = '{:>999999999}'.format('x')\n",  # a huge width
        "src = f'{1:>999999999}'\n",
        "src = 'x' * 3\n",  # only +, never *
        "src = undefined_name\n",
    ],
)
def test_values_the_text_does_not_fix_are_not_read(body):
    assert _one(HEAD + body + "ext = load_inline('e', src, functions=['f'])\n") is None


def test_doubling_names_stop_at_the_size_bound():
    body = "a0 = 'xxxxxxxxxxxxxxxx'\n" + "".join(f"a{i + 1} = a{i} + a{i}\n" for i in range(40))
    assert _one(HEAD + body + "ext = load_inline('e', a40, functions=['f'])\n") is None


def test_unbindable_or_spread_calls_and_bad_syntax_are_not_read():
    assert _one(HEAD + "ext = load_inline(**{'name': 'e', 'cpp_sources': ''})\n") is None
    assert _one(HEAD + "args = ['e', '']\next = load_inline(*args)\n") is None
    assert _one(HEAD + "ext = load_inline(cpp_sources='')\n") is None  # no name
    assert literal_calls("def broken(:\n") == []


def test_the_same_call_twice_is_read_once():
    line = "load_inline('e', 'int f();', functions=['f'])\n"
    assert len(literal_calls(HEAD + "e1 = " + line + "e2 = " + line)) == 1


def test_a_parameter_hides_the_module_name_of_the_same_name():
    body = "def make(src):\n    return load_inline('e', src, functions=['f'])\n"
    text = HEAD + "src = 'int f();'\n" + body
    assert literal_calls(text) == []
