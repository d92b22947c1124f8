"""The rules profiles on single files: PyTorch compute in forward or in a load_inline source is
refused by the cuda-agent rules and listed, with file:line, by the kernelbench rules, also
through a compile-stage evaluation; every single-file cheat whose trick is more than PyTorch
doing the work is refused under both, and each one whose only trick is that is named below."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_submission
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import RulesProfile
from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.guard import call_findings, file_findings
from cuda_agent.task import load_task

HERE = Path(__file__).parent
RULES = HERE.parent / "rules"
CHEATS = sorted(p for p in (HERE / "cheats").iterdir() if p.is_dir())
CUDA_AGENT, KERNELBENCH = RulesProfile.CUDA_AGENT, RulesProfile.KERNELBENCH
MEAN_SOURCE = "load_inline('rules_mean_square') cuda_sources"


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


STATIC = [p for p in CHEATS if _expect(p)["caught_by"] == "static"]
# The single-file cheats whose only trick is PyTorch doing the work: the kernelbench rules allow
# and list them (the op they list first). Every other static cheat is refused by both profiles.
ONLY_TORCH_COMPUTE = {
    "c1_aten_in_wrapper": "torch::gelu",
    "c1_fallback_beside_token_call": "torch.nn.functional.gelu",
    "c1_tensor_methods_in_wrapper": ".mul()",
}


def _judged(text: str, profile: RulesProfile):
    """The file's Python and every extension call read from its text, as the guard sees them."""
    found = file_findings("model_new.py", text, "ModelNew")
    found += [f for call in literal_calls(text) for f in call_findings(call)]
    return judge(found, profile)


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
@pytest.mark.parametrize("folder", STATIC, ids=[p.name for p in STATIC])
def test_each_static_single_file_cheat_under_each_profile(folder, profile):
    judged = _judged((folder / "model_new.py").read_text(), profile)
    if profile == KERNELBENCH and folder.name in ONLY_TORCH_COMPUTE:
        assert judged.violations == (), judged.violations  # allowed, and listed
        assert judged.torch_ops[0].op == ONLY_TORCH_COMPUTE[folder.name]
    else:
        assert judged.violations, f"{folder.name} passes the {profile} rules"


def test_the_precision_cheats_are_refused_under_kernelbench():
    for name in ("c7_half_in_wrapper", "c7_tf32_switch"):
        text = (HERE / "cheats" / name / "model_new.py").read_text()
        assert _judged(text, KERNELBENCH).violations, name


def test_mean_in_a_load_inline_source_is_refused_or_listed_with_its_line():
    text = (RULES / "single_mean_in_wrapper.py").read_text()
    refused = _judged(text, CUDA_AGENT)
    assert [v.message for v in refused.violations] == [
        "load_inline('rules_mean_square') cuda_sources:18: calls the tensor method .mean() "
        "(ATen compute); write a kernel instead",
    ]
    listed = _judged(text, KERNELBENCH)
    assert listed.violations == ()
    assert [(o.op, o.file, o.line, o.layer) for o in listed.torch_ops] == [
        (".mean()", MEAN_SOURCE, 18, "static_cpp")
    ]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))


def _compile(cache: Path, profile: RulesProfile, name: str):
    task = load_task(RULES / "add_relu_task.py")
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=60, rules=profile)) as env:
        return env.evaluate(task, read_submission(RULES / name), Stage.COMPILE)


def test_a_partial_single_file_is_refused_by_cuda_agent_at_the_compile_stage(cache):
    verdict = _compile(cache, CUDA_AGENT, "single_partial_add_relu.py")
    assert verdict.status == Status.VIOLATION and verdict.rules == "cuda-agent"
    assert [v.message for v in verdict.violations] == [
        "model_new.py:48: calls torch.relu (PyTorch compute); write a kernel instead"
    ]
    assert verdict.torch_ops == []


def test_a_partial_single_file_compiles_with_its_torch_ops_under_kernelbench(cache):
    verdict = _compile(cache, KERNELBENCH, "single_partial_add_relu.py")
    assert verdict.status == Status.OK and verdict.compiled, verdict.summary()
    assert verdict.rules == "kernelbench" and verdict.violations == []
    assert [(o.op, o.file, o.line) for o in verdict.torch_ops] == [
        ("torch.relu", "model_new.py", 48)
    ]
    assert "torch op (allowed by the kernelbench rules): torch.relu at model_new.py:48" in (
        verdict.summary()
    )


def test_an_extension_s_aten_compute_is_listed_when_its_process_asks_for_it(cache):
    """The extension's sources are judged when the file's process builds them: the listing
    comes from the harness's builder, not from reading the file ahead."""
    verdict = _compile(cache, KERNELBENCH, "single_mean_in_wrapper.py")
    assert verdict.violations == [], verdict.summary()
    assert (".mean()", MEAN_SOURCE, 18) in [(o.op, o.file, o.line) for o in verdict.torch_ops]
