"""Kept trajectories as veRL multi-turn SFT data: read by veRL's own dataset, loss only on what
the policy wrote, every tool schema and argument exactly as the episode had it."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.rl.extras import VERL_MISSING

pytest.importorskip("verl", reason=VERL_MISSING)
from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
from verl.utils.tokenizer.tokenizer import normalize_token_ids

from cuda_agent.agent import NO_TOOL_CALL, TextTools, load_trajectory
from cuda_agent.rl import to_conversation, write_sft_dataset
from cuda_agent.rl.verl_sft import JsonMultiTurnSFTDataset
from tests.rl.trajectories import SCHEMAS, Call, Turn, write_trajectory

TURNS = [
    Turn("Look first.", [Call("read_file", {"path": "model.py", "start_line": 1}, "class Model")]),
    Turn("Thinking about tiling."),
    Turn(None, [Call("bash", {"command": "nvcc --version"}, "release 12.4")]),
    Turn("Done.", [Call("submit", {}, "submitted; the episode ends")]),
]
SFT_CONFIG = {"max_length": 16384, "pad_mode": "no_padding", "truncation": "error"}


def trained_text(tokenizer, item) -> str:
    ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
    return tokenizer.decode(
        [t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False
    )


def test_conversation_parses_arguments_and_drops_the_text_protocol(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", TURNS, 3, text_tools=True)
    conversation = to_conversation(load_trajectory(path))
    assert not conversation.messages[0]["content"].endswith(TextTools().system_addendum(SCHEMAS))
    assert "# Calling tools" not in conversation.messages[0]["content"]
    roles = [m["role"] for m in conversation.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert conversation.messages[2]["tool_calls"][0]["function"]["arguments"] == {
        "path": "model.py",
        "start_line": 1,
    }
    assert conversation.messages[5]["content"] == NO_TOOL_CALL
    assert conversation.messages[3]["name"] == "read_file" and conversation.reward == 3


def test_veRL_trains_only_the_assistant_turns(tmp_path, tokenizer):
    path = write_trajectory(tmp_path / "t.jsonl", TURNS, 3)
    written = write_sft_dataset([path], tmp_path / "sft.parquet")
    assert (written.rows, written.parallel_calls) == (1, 0)
    dataset = JsonMultiTurnSFTDataset(str(written.path), tokenizer, SFT_CONFIG)
    item = dataset[0]
    conversation = to_conversation(load_trajectory(path))
    whole = normalize_token_ids(
        tokenizer.apply_chat_template(
            conversation.messages, tools=conversation.tools, tokenize=True
        )
    )
    assert item["input_ids"].tolist() == whole  # the episode exactly, tools included
    replies = [
        "Look first.\n<tool_call>\n"
        '{"name": "read_file", "arguments": {"path": "model.py", "start_line": 1}}\n</tool_call>',
        "Thinking about tiling.",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "nvcc --version"}}\n</tool_call>',
        'Done.\n<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
    ]
    assert trained_text(tokenizer, item) == "".join(r + "<|im_end|>\n" for r in replies)


def test_parallel_calls_still_train_only_the_assistant(tmp_path, tokenizer):
    turns = [
        Turn(
            "Two at once.",
            [Call("read_file", {"path": "model.py"}, "A"), Call("list_files", {}, "B")],
        )
    ]
    path = write_trajectory(tmp_path / "t.jsonl", turns + TURNS[3:], 2)
    written = write_sft_dataset([path], tmp_path / "sft.parquet")
    assert written.parallel_calls == 1
    config = {**SFT_CONFIG, "ignore_input_ids_mismatch": True}  # as rft.yaml sets it
    text = trained_text(tokenizer, JsonMultiTurnSFTDataset(str(written.path), tokenizer, config)[0])
    assert text.startswith("Two at once.\n<tool_call>") and "<tool_response>" not in text


def test_native_arrow_columns_would_corrupt_calls(tmp_path, tokenizer):
    """Why the columns are JSON text: stored as nested columns, Arrow gives every tool the union
    of all tools' parameters and every call the union of all arguments, filled with null."""
    path = write_trajectory(tmp_path / "t.jsonl", TURNS, 3)
    conversation = to_conversation(load_trajectory(path))
    pq.write_table(
        pa.Table.from_pylist([{"messages": conversation.messages, "tools": conversation.tools}]),
        tmp_path / "native.parquet",
    )
    native = MultiTurnSFTDataset(str(tmp_path / "native.parquet"), tokenizer, SFT_CONFIG)
    bash_call = native.messages[0][6]["tool_calls"][0]["function"]["arguments"]
    assert (
        bash_call["command"] == "nvcc --version"
        and "path" in bash_call
        and bash_call["path"] is None
    )
    stored = json.loads(
        pq.read_table(write_sft_dataset([path], tmp_path / "s.parquet").path)["messages"][0].as_py()
    )
    assert stored[6]["tool_calls"][0]["function"]["arguments"] == {"command": "nvcc --version"}
