"""Violations, typed: the rule and the check beside the line users see; plain strings from
results written before the types load as violations of rule `unknown`."""

import json

from cuda_agent.sandbox import Check, Rule, Stage, Status, Verdict, Violation, solution_from_files
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import RulesProfile
from cuda_agent.sandbox.guard.static import static_findings

STATIC_LINE = "model_new.py:14: calls torch.softmax (PyTorch compute); write a kernel instead"
RUNTIME_LINE = "forward dispatched aten::lstm (1x): PyTorch computed part of the result"
TIMING_LINE = "the device timer reported more time than the host clock around the call"


def _verdict(violations) -> Verdict:
    return Verdict(
        task="t", task_hash="h", stage=Stage.PROFILE, status=Status.VIOLATION, compiled=False,
        correct=False, violations=violations,
    )  # fmt: skip


def test_a_static_guard_cheat_names_its_rule_and_check():
    code = "import os\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    found = static_findings(solution_from_files({"model_new.py": code}))
    judged = judge(found, RulesProfile.CUDA_AGENT)
    assert [(v.rule, v.check) for v in judged.violations] == [
        (Rule.IMPORT, Check.STATIC_GUARD),
        (Rule.NO_EXTENSION, Check.STATIC_GUARD),
    ]
    assert [v.message for v in judged.violations] == [f.text for f in found]


def test_a_verdict_prints_each_violation_as_its_line():
    typed = Violation(rule=Rule.TORCH_COMPUTE, check=Check.STATIC_GUARD, message=STATIC_LINE)
    assert str(typed) == STATIC_LINE
    assert f"violation: {STATIC_LINE}" in _verdict([typed]).summary().splitlines()


def test_typed_violations_survive_the_results_file():
    typed = Violation(rule=Rule.DEVICE_OVER_HOST, check=Check.TIMING_CHECKS, message=TIMING_LINE)
    line = _verdict([typed]).model_dump_json()
    assert json.loads(line)["violations"] == [
        {"rule": "device_over_host", "check": "timing_checks", "message": TIMING_LINE}
    ]
    assert Verdict.model_validate_json(line).violations == [typed]


def test_plain_strings_of_older_results_load_with_their_check_where_their_shape_tells_it():
    old = json.loads(_verdict([]).model_dump_json())
    old["violations"] = [STATIC_LINE, RUNTIME_LINE, TIMING_LINE]
    loaded = Verdict.model_validate_json(json.dumps(old)).violations
    assert [v.message for v in loaded] == old["violations"]
    assert {v.rule for v in loaded} == {Rule.UNKNOWN}
    assert [v.check for v in loaded] == [Check.STATIC_GUARD, Check.RUNTIME_GUARD, Check.UNKNOWN]
