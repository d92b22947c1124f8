"""Kept trajectories as training data: veRL's multi-turn SFT parquet (RFT), and the replay set
that pre-trains the critic on the same episodes.

SFT rows hold `messages` and `tools` as JSON text. Arrow stores a column of dicts as one struct
type for all rows, so the tools' different parameters (and the calls' different arguments)
would come back as the union of every key, the missing ones null: the model would be trained
to emit `"path": null` in a bash call. Text columns keep each conversation exactly as it was;
`cuda_agent.rl.verl_sft.JsonMultiTurnSFTDataset` (veRL's dataset, decoding them) reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.agent import load_trajectory
from cuda_agent.errors import UserError
from cuda_agent.rl.conversation import Conversation, to_conversation
from cuda_agent.rl.dataset import REPLAY_LOOP, write_rows


@dataclass(frozen=True)
class WrittenSet:
    path: Path
    rows: int
    parallel_calls: int  # rows with several calls in one reply (see docs/training.md)


def sft_row(conversation: Conversation) -> dict:
    return {
        "messages": json.dumps(conversation.messages),
        "tools": json.dumps(conversation.tools),
        "task": conversation.task.name,
        "task_hash": conversation.task.hash,
        "reward": conversation.reward,
    }


def replay_row(conversation: Conversation, index: int) -> dict:
    """An RL-dataset row whose agent loop replays the stored turns instead of generating."""
    task = conversation.task
    return {
        "data_source": task.source.data_source or task.source.kind,
        "prompt": conversation.messages[:2],
        "ability": "cuda",
        "reward_model": {"style": "rule", "ground_truth": task.hash},
        "extra_info": {
            "index": index,
            "split": "train",
            "task_hash": task.hash,
            "task": task.to_record(),
            "replay": json.dumps(
                {
                    "turns": conversation.messages[2:],
                    "tools": conversation.tools,
                    "reward": conversation.reward,
                }
            ),
        },
        "agent_name": REPLAY_LOOP,
    }


def conversations(paths: Iterable[Path]) -> Iterable[Conversation]:
    for path in paths:
        yield to_conversation(load_trajectory(path))


def write_sft_dataset(paths: Iterable[Path], out: str | Path) -> WrittenSet:
    rows, parallel = [], 0
    for conversation in conversations(paths):
        rows.append(sft_row(conversation))
        parallel += conversation.parallel_calls
    return WrittenSet(write_rows(_nonempty(rows), out), len(rows), parallel)


def write_replay_dataset(paths: Iterable[Path], out: str | Path) -> WrittenSet:
    rows, parallel = [], 0
    for i, conversation in enumerate(conversations(paths)):
        rows.append(replay_row(conversation, i))
        parallel += conversation.parallel_calls
    return WrittenSet(write_rows(_nonempty(rows), out), len(rows), parallel)


def _nonempty(rows: list[dict]) -> list[dict]:
    if not rows:
        raise UserError("no trajectories to write; the filter kept none (see its report)")
    return rows
