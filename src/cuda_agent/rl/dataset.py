"""The RL dataset: one parquet row per task, in the schema veRL's RLHFDataset reads.

    prompt          chat messages (system, user): what the policy sees first
    data_source     where the task came from (veRL groups metrics by it)
    ability         "cuda"
    reward_model    {"style": "rule", "ground_truth": task hash}
    extra_info      {"index", "split", "task_hash", "task": Task.to_record()}
    agent_name      the agent loop that runs the row (registered by the agent-loop YAML)

The multi-turn prompt is exactly the agent's (`cuda_agent.agent.initial_messages` with native
tool calls), so the policy trained here is the one `cuda-agent optimize` and the benchmark run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq

from cuda_agent.agent import initial_messages, skill_text
from cuda_agent.errors import UserError
from cuda_agent.rl.single_turn import single_turn_messages
from cuda_agent.task import Task

AGENT_LOOP = "cuda_agent"  # multi-turn episodes in a workspace (rl/configs/agent_loops.yaml)
REPLAY_LOOP = "cuda_agent_replay"  # stored trajectories replayed for critic pre-training
SINGLE_TURN_LOOP = "single_turn_agent"  # veRL's own one-reply loop, scored by verl_reward
Mode = Literal["single_turn", "multi_turn"]


def task_row(task: Task, index: int, mode: Mode, split: str = "train") -> dict:
    """One dataset row for `task`."""
    if mode == "single_turn":
        prompt, agent = single_turn_messages(task, skill_text()), SINGLE_TURN_LOOP
    else:
        prompt, agent = initial_messages(task, skill_text()), AGENT_LOOP
    return {
        "data_source": task.source.data_source or task.source.kind,
        "prompt": prompt,
        "ability": "cuda",
        "reward_model": {"style": "rule", "ground_truth": task.hash},
        "extra_info": {
            "index": index,
            "split": split,
            "task_hash": task.hash,
            "task": task.to_record(),
        },
        "agent_name": agent,
    }


def write_rl_dataset(
    tasks: Sequence[Task], path: str | Path, mode: Mode, split: str = "train"
) -> Path:
    """Write the rows of `tasks` to a parquet file; tasks with the same program appear once."""
    seen: set[str] = set()
    unique = [t for t in tasks if not (t.hash in seen or seen.add(t.hash))]
    if not unique:
        raise UserError("no tasks to write; give a task set with at least one task")
    rows = [task_row(task, i, mode, split) for i, task in enumerate(unique)]
    return write_rows(rows, path)


def write_rows(rows: list[dict], path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    tmp.replace(out)
    return out
