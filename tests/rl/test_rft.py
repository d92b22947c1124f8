"""The RFT filter on crafted trajectories: each rule drops exactly the ones that break it."""

from __future__ import annotations

import json

import pytest

from cuda_agent.errors import UserError
from cuda_agent.rl import RULES, RFTRules, filter_trajectories, trajectory_files
from tests.rl.trajectories import Call, Turn, write_trajectory

WRITE = Call("write_file", {"path": "model_new.py", "content": "x"}, "wrote model_new.py")
COMPILE_FAIL = Call("compile", {}, "[compile] compile_error\nkernels/a.cu:3: error", ok=False)
CHANGED = {"model_new.py": "x"}


def good_turns() -> list[Turn]:
    """A realistic success: the same compile call four times, but with a change before each."""
    turns = [Turn("read", [Call("read_file", {"path": "model.py"}, "class Model")])]
    for i in range(4):
        edit = Call(
            "edit_file", {"path": "model_new.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"}
        )
        turns.append(
            Turn(
                f"try {i}",
                [edit, Call("compile", {}, "[compile] ok")],
                {"model_new.py": f"v{i + 1}"},
            )
        )
    turns.append(Turn("done", [Call("submit", {}, "submitted; the episode ends")]))
    return turns


CASES = {
    "good": (good_turns(), 3, []),
    "low_reward": (good_turns(), -1, ["reward"]),
    "interrupted": (good_turns()[:2], None, ["incomplete", "reward"]),
    "bad_json": (
        [
            Turn(
                None,
                [
                    Call(
                        "write_file",
                        '{"path": "model_new.py", "content": ',
                        "error: not valid JSON",
                        False,
                        "bad_json",
                    )
                ],
            )
        ]
        + good_turns(),
        2,
        ["invalid_call"],
    ),
    "bad_arguments": (
        [
            Turn(
                None,
                [
                    Call(
                        "read_file",
                        {"file": "model.py"},
                        "error: missing path",
                        False,
                        "bad_arguments",
                    )
                ],
            )
        ]
        + good_turns(),
        2,
        ["invalid_call"],
    ),
    "refused": (
        [
            Turn(
                None,
                [
                    Call(
                        "write_file",
                        {"path": "model.py", "content": ""},
                        "refused: protected",
                        False,
                        "refused",
                    )
                ],
            )
        ]
        + good_turns(),
        2,
        ["invalid_call"],
    ),
    "hallucinated_tool": (
        [Turn(None, [Call("run_cuda", {}, "error: unknown tool", False, "unknown_tool")])]
        + good_turns(),
        3,
        ["unknown_tool"],
    ),
    "read_loop": (
        [Turn("again", [Call("read_file", {"path": "model.py"}, "class Model")]) for _ in range(3)]
        + good_turns(),
        3,
        ["repeated_call"],
    ),
    "read_twice": (
        [Turn("again", [Call("read_file", {"path": "SKILL.md"}, "# SKILL.md")]) for _ in range(2)]
        + good_turns(),
        3,
        [],
    ),
    "same_args_other_order": (
        [
            Turn("a", [Call("grep", {"pattern": "x", "path": "."})]),
            Turn("b", [Call("grep", {"path": ".", "pattern": "x"})]),
            Turn("c", [Call("grep", {"pattern": "x", "path": "."})]),
        ]
        + good_turns(),
        3,
        ["repeated_call"],
    ),
    "stuck_on_one_error": (
        [Turn("fix", [WRITE, COMPILE_FAIL], CHANGED) for _ in range(4)] + good_turns(),
        3,
        ["repeated_failure"],
    ),
    "same_error_three_times": (
        [Turn("fix", [WRITE, COMPILE_FAIL], CHANGED) for _ in range(3)] + good_turns(),
        3,
        [],
    ),
    "everything_wrong": (
        [
            Turn(None, [Call("x", {}, "error: unknown tool", False, "unknown_tool")])
            for _ in range(4)
        ],
        -1,
        ["reward", "unknown_tool", "repeated_call", "repeated_failure"],
    ),
}


@pytest.fixture()
def crafted(tmp_path):
    for name, (turns, reward, _) in CASES.items():
        write_trajectory(tmp_path / "episodes" / f"{name}.jsonl", turns, reward)
    (tmp_path / "episodes" / "notes.jsonl").write_text('{"hello": 1}\n')
    return tmp_path / "episodes"


def test_each_rule_drops_exactly_its_trajectories(crafted):
    result = filter_trajectories(trajectory_files(crafted))
    reasons = {
        p.rsplit("/", 1)[-1].removesuffix(".jsonl"): r for p, r in result.report.reasons.items()
    }
    expected = {name: broken for name, (_, _, broken) in CASES.items() if broken}
    assert reasons == {**expected, "notes": ["unreadable"]}
    assert sorted(p.stem for p in result.kept) == sorted(
        n for n, (_, _, b) in CASES.items() if not b
    )
    counts = {rule: sum(rule in b for _, _, b in CASES.values()) for rule in RULES}
    assert result.report.by_rule == counts
    assert (result.report.total, result.report.kept, result.report.unreadable) == (14, 3, 1)
    assert json.loads(result.report.to_json())["dropped"] == 11
    assert result.report.summary() == (
        "kept 3 of 14 trajectories; dropped 11 (incomplete 1, reward 3, invalid_call 3, "
        "unknown_tool 2, repeated_call 3, repeated_failure 2), 1 unreadable"
    )


def test_limits_and_reward_threshold_are_settings(crafted):
    loose = filter_trajectories(
        trajectory_files(crafted),
        RFTRules(min_reward=3, max_repeated_calls=4, max_repeated_failures=4),
    )
    kept = sorted(p.stem for p in loose.kept)
    assert kept == [
        "good",
        "read_loop",
        "read_twice",
        "same_args_other_order",
        "same_error_three_times",
        "stuck_on_one_error",
    ]


def test_no_trajectories_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no \\*.jsonl trajectories"):
        trajectory_files(tmp_path)
    with pytest.raises(UserError, match="no such trajectory"):
        trajectory_files(tmp_path / "missing")
