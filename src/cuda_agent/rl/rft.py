"""Rejection fine-tuning data: the stored trajectories worth imitating, and why the rest are not.

A trajectory is kept only when every rule passes:

    incomplete        it has an end record (the episode finished)
    reward            its reward is at least `min_reward` (positive by default)
    invalid_call      no call had broken JSON, wrong arguments, or was refused by the workspace
    unknown_tool      no call named a tool that does not exist (a hallucinated tool)
    repeated_call     no identical call (same tool, same arguments) more than `max_repeated_calls`
                      times with no workspace change in between (a redundant loop)
    repeated_failure  no identical failure (same tool, same output) more than
                      `max_repeated_failures` times in the episode (stuck on one error)

Files that are not trajectories count under `unreadable`. The report counts, per rule, the
trajectories that break it (one trajectory can break several), so it says exactly what each
rule removed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.agent import Trajectory, load_trajectory
from cuda_agent.errors import UserError

RULES = (
    "incomplete",
    "reward",
    "invalid_call",
    "unknown_tool",
    "repeated_call",
    "repeated_failure",
)
INVALID_KINDS = frozenset({"bad_json", "bad_arguments", "refused"})


@dataclass(frozen=True)
class RFTRules:
    min_reward: int = 1
    max_repeated_calls: int = 2
    max_repeated_failures: int = 3


@dataclass(frozen=True)
class FilterReport:
    total: int
    kept: int
    by_rule: dict[str, int]  # trajectories breaking each rule
    unreadable: int
    reasons: dict[str, list[str]] = field(default_factory=dict)  # path -> rules broken

    def to_json(self) -> str:
        return json.dumps(
            {
                "total": self.total,
                "kept": self.kept,
                "dropped": self.total - self.kept,
                "by_rule": self.by_rule,
                "unreadable": self.unreadable,
                "reasons": self.reasons,
            },
            indent=2,
        )

    def summary(self) -> str:
        parts = ", ".join(f"{rule} {self.by_rule[rule]}" for rule in RULES if self.by_rule[rule])
        dropped = f"dropped {self.total - self.kept}" + (f" ({parts})" if parts else "")
        tail = f", {self.unreadable} unreadable" if self.unreadable else ""
        return f"kept {self.kept} of {self.total} trajectories; {dropped}{tail}"


@dataclass(frozen=True)
class FilterResult:
    kept: list[Path]  # loaded again when converted, so a large set never sits in memory
    report: FilterReport


def broken_rules(trajectory: Trajectory, rules: RFTRules) -> list[str]:
    """The rules `trajectory` breaks, in RULES order (empty: keep it)."""
    broken = set()
    if trajectory.end is None:
        broken.add("incomplete")
    if trajectory.end is None or trajectory.end.reward < rules.min_reward:
        broken.add("reward")
    calls_since_change: Counter[tuple[str, str]] = Counter()
    failures: Counter[tuple[str, str]] = Counter()
    for turn in trajectory.turns:
        for call in turn.assistant.tool_calls:
            key = (call.name, _canonical(call.arguments))
            calls_since_change[key] += 1
            if calls_since_change[key] > rules.max_repeated_calls:
                broken.add("repeated_call")
        for obs in turn.observations:
            if obs.error_kind in INVALID_KINDS:
                broken.add("invalid_call")
            elif obs.error_kind == "unknown_tool":
                broken.add("unknown_tool")
            if not obs.ok:
                failures[(obs.name, obs.content)] += 1
                if failures[(obs.name, obs.content)] > rules.max_repeated_failures:
                    broken.add("repeated_failure")
        if turn.files:
            calls_since_change.clear()
    return [rule for rule in RULES if rule in broken]


def trajectory_files(source: str | Path) -> list[Path]:
    """A trajectory file, or every *.jsonl under a folder (sorted)."""
    root = Path(source)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise UserError(f"{root}: no such trajectory file or folder")
    files = sorted(root.rglob("*.jsonl"))
    if not files:
        raise UserError(f"{root}: no *.jsonl trajectories found under it")
    return files


def filter_trajectories(paths: Iterable[Path], rules: RFTRules = RFTRules()) -> FilterResult:
    kept, reasons = [], {}
    by_rule = dict.fromkeys(RULES, 0)
    total = unreadable = 0
    for path in paths:
        total += 1
        try:
            trajectory = load_trajectory(path)
        except UserError:
            unreadable += 1
            reasons[str(path)] = ["unreadable"]
            continue
        broken = broken_rules(trajectory, rules)
        for rule in broken:
            by_rule[rule] += 1
        if broken:
            reasons[str(path)] = broken
        else:
            kept.append(Path(path))
    return FilterResult(kept, FilterReport(total, len(kept), by_rule, unreadable, reasons))


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except json.JSONDecodeError:
        return arguments.strip()
