"""Single-file submissions on a machine without a GPU: every honest form of load_inline/load gets
a real compile verdict (imported and constructed in the confined child, its extensions guarded
and built by the harness, each source built once), every statically caught cheat is refused with
the rule it breaks, and bad files end with a clear verdict in bounded time."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from cuda_agent.sandbox import (
    EnvConfig,
    Environment,
    SingleFileSolution,
    Stage,
    Status,
    read_submission,
    single_file_solution,
)
from cuda_agent.sandbox.single_file.flags import read_flags
from cuda_agent.task import load_task

HERE = Path(__file__).parent
REPO = HERE.parents[2]
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
CHEATS = sorted(p for p in (HERE / "cheats").iterdir() if p.is_dir())
TASK = REPO / "tests/sandbox/tasks/scale_gelu.py"

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="covers the machine without a GPU (the GPU file runs there)"
)


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


STATIC = [p for p in CHEATS if _expect(p)["caught_by"] == "static" or _expect(p).get("cpu")]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=20)) as environment:
        yield environment


@pytest.fixture(scope="module")
def task():
    return load_task(TASK)


def test_a_folder_or_a_file_is_read_as_a_single_file(tmp_path):
    solution = read_submission(HONEST[0])
    assert isinstance(solution, SingleFileSolution) and solution.entry_point == "ModelNew"
    file = tmp_path / "level_1_problem_19_sample_0_kernel.py"
    file.write_text(solution.source)
    again = read_submission(file, entry_point="Fast")
    assert isinstance(again, SingleFileSolution) and again.entry_point == "Fast"
    assert again.hash != solution.hash  # the entry point is part of what is evaluated
    workspace = read_submission(REPO / "tests/sandbox/honest/scale_gelu")
    assert not isinstance(workspace, SingleFileSolution)


def test_a_file_without_model_new_is_entered_at_its_model_class():
    model = (HERE / "honest" / "entry_model" / "model_new.py").read_text()
    assert single_file_solution(model).entry_point == "Model"
    both = model + "\n\nclass ModelNew(Model):\n    pass\n"
    assert single_file_solution(both).entry_point == "ModelNew"
    assert single_file_solution(BASE.replace("class ModelNew(", "class Fast(")).entry_point == (
        "ModelNew"  # neither: scored as missing its ModelNew
    )
    assert single_file_solution("class Model(:\n").entry_point == "ModelNew"  # does not parse
    assert single_file_solution(model, entry_point="Fast").entry_point == "Fast"  # as told


def test_a_model_class_named_as_the_entry_point_is_not_the_reference(env, task):
    """Entered at Model, the file's own class and references to it are allowed; told to enter
    it at ModelNew, the class named like the reference is refused, with the name to use."""
    model = (HERE / "honest" / "entry_model" / "model_new.py").read_text()
    told = env.evaluate(task, single_file_solution(model, "ModelNew"), Stage.COMPILE)
    assert told.status == Status.VIOLATION
    assert any("name yours ModelNew" in v.message for v in told.violations), told.violations
    entered = env.evaluate(task, single_file_solution(model, "Model"), Stage.COMPILE)
    assert entered.status == Status.OK and not entered.violations, entered.summary()


@pytest.mark.parametrize("folder", HONEST, ids=[p.name for p in HONEST])
def test_honest_form_compiles(env, folder):
    task = load_task(REPO / _expect(folder)["task"])
    verdict = env.evaluate(task, read_submission(folder), Stage.COMPILE)
    assert verdict.status == Status.OK and verdict.compiled, verdict.summary()
    assert not verdict.violations
    if folder.name == "lazy_forward":
        assert "forward builds an extension itself" in verdict.message
    else:
        assert "built 0 extension" not in verdict.message, verdict.message
    if _expect(folder).get("narrowed"):  # the canonical forms never pay for all of torch
        assert "against the narrow torch prelude" in verdict.message, verdict.message
    # sources written as literals are read from the text and built while the process starts:
    # the call the process then made was exactly the one read
    ahead = "read from the file's text and built while its process started"
    assert (ahead in verdict.message) == _expect(folder).get("ahead", True), verdict.message
    note = _expect(folder).get("note")
    if note:
        assert any(note in n for n in verdict.notes), verdict.notes
    later = env.evaluate(task, read_submission(folder), Stage.PROFILE)
    assert later.status == Status.NO_GPU and later.compiled and later.reward == -1


def test_the_same_sources_never_build_twice(env, task):
    env.evaluate(task, read_submission(HERE / "honest" / "strings"), Stage.COMPILE)
    for form in ("lists", "fstring", "format", "sm86_flags", "lazy_init"):
        verdict = env.evaluate(task, read_submission(HERE / "honest" / form), Stage.COMPILE)
        assert "compiled 0 file(s)" in verdict.message, (form, verdict.message)


@pytest.mark.parametrize("folder", STATIC, ids=[p.name for p in STATIC])
def test_cheat_is_caught_without_a_gpu(env, task, folder):
    expect = _expect(folder)
    verdict = env.evaluate(task, read_submission(folder), Stage.COMPILE)
    assert verdict.status.value in expect["expect_status"], verdict.summary()
    assert verdict.reward == -1
    if expect["caught_by"] == "static":
        assert verdict.violations and not verdict.compiled, verdict.summary()


def _verdict(env, task, text: str, stage=Stage.COMPILE):
    return env.evaluate(task, single_file_solution(text), stage)


BASE = (HERE / "honest" / "strings" / "model_new.py").read_text()


@pytest.mark.parametrize(
    ("name", "text", "status", "says"),
    [
        ("empty", "\n\n", Status.INVALID, "empty"),
        ("syntax", BASE.replace("class ModelNew(nn.Module):", "class ModelNew(nn.Module)"),
         Status.INVALID, "does not parse"),
        ("no_entry", BASE.replace("class ModelNew(", "class Fast("), Status.INVALID,
         "no class ModelNew"),
        ("triton", "import triton\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n",
         Status.VIOLATION, "launches no Triton kernel"),
        ("not_exported", BASE.replace('functions=["scale_gelu"]', 'functions=["scale_gelu_v2"]'),
         Status.COMPILE_ERROR, "scale_gelu_v2"),
        ("raises", BASE.replace("self.scale = float(scale)", "self.scale = float(scale) / 0"),
         Status.RUNTIME_ERROR, "ZeroDivisionError"),
        ("bad_flag", BASE.replace('functions=["scale_gelu"],', 'functions=["scale_gelu"],\n'
         '    extra_cflags=["-fplugin=./evil.so"],'), Status.VIOLATION, "-fplugin"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else "",
)  # fmt: skip
def test_bad_file_gets_a_clear_verdict(env, task, name, text, status, says):
    verdict = _verdict(env, task, text)
    assert verdict.status == status, verdict.summary()
    assert says in verdict.message + " ".join(map(str, verdict.violations)), verdict.summary()


def test_an_honest_triton_file_without_triton_installed_says_what_ran(env):
    if importlib.util.find_spec("triton") is not None:
        pytest.skip("Triton is installed here: the file is imported as usual")
    add = load_task(HERE.parent / "tasks" / "elementwise_add.py")
    text = (HERE.parents[1] / "fixtures" / "triton" / "honest_add.py").read_text()
    verdict = env.evaluate(add, single_file_solution(text), Stage.VERIFY)
    expected = Status.HARNESS_ERROR if torch.cuda.is_available() else Status.NO_GPU
    assert verdict.status == expected and verdict.violations == [], verdict.summary()
    assert "the static guard passed" in verdict.message and "no triton" in verdict.message


def test_a_hang_at_import_times_out_and_the_next_evaluation_is_unaffected(env, task):
    hang = BASE.replace("class ModelNew(", "while True:\n    pass\n\n\nclass ModelNew(")
    with Environment(replace(env.config, child_timeout_s=3)) as short:
        verdict = short.evaluate(task, single_file_solution(hang), Stage.COMPILE)
        assert verdict.status == Status.TIMEOUT, verdict.summary()
        after = short.evaluate(task, single_file_solution(BASE), Stage.COMPILE)
        assert after.status == Status.OK, after.summary()


def test_architecture_flags_are_replaced_and_named():
    flags = read_flags(
        ["", "-O3", "-I/opt/include"],
        ["-arch=sm_86", "-gencode", "arch=compute_86,code=sm_86", "--use_fast_math"],
        ["-lcublas", "-L/opt/lib"],
        [],
        "sm_90",
    )
    assert flags.host == ("-O3",) and flags.nvcc == ("--use_fast_math",)
    assert flags.libraries == ("cublas",) and not flags.refused
    assert "-arch=sm_86 -gencode arch=compute_86,code=sm_86" in flags.notes[0]
    assert "sm_90" in flags.notes[0]
    refused = read_flags(["-fplugin=x.so"], ["-Xcompiler", "-fplugin=y.so"], ["-Wl,-init"], [], "x")
    assert len(refused.refused) == 3
    hidden = read_flags(["-fvisibility=hidden"], ["-Xcompiler", "-fvisibility=hidden"], [], [], "x")
    assert not hidden.refused
    shown = read_flags(["-fvisibility=default"], ["-Xcompiler=-fvisibility=default"], [], [], "x")
    assert len(shown.refused) == 2
