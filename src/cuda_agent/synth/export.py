"""Write the accepted tasks as parquet and JSONL: the CUDA-Agent-Ops-6K columns (`code`, `ops`
as a JSON list in a string, `data_source`) plus ours. `cuda_agent.task.load_tasks` reads both."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cuda_agent.synth.journal import Journal
from cuda_agent.task import content_hash

DATA_SOURCE = "cuda-agent-synth"
SCHEMA = pa.schema(
    [
        ("code", pa.string()),
        ("ops", pa.string()),
        ("data_source", pa.string()),
        ("name", pa.string()),
        ("hash", pa.string()),
        ("seed", pa.int64()),
        ("candidate", pa.int64()),
        ("num_ops", pa.int64()),
        ("composer", pa.string()),
        ("device", pa.string()),
        ("input_shapes", pa.list_(pa.list_(pa.int64()))),
        ("output_shapes", pa.list_(pa.list_(pa.int64()))),
        ("eager_ms", pa.float64()),
        ("compile_ms", pa.float64()),
    ]
)


def task_rows(journals: dict[str, Journal], ids: list[int], seed: int, device: str) -> list[dict]:
    rows = []
    for i in ids:
        compose, eager = journals["compose"].get(i), journals["eager"].get(i)
        labels, compiled = journals["labels"].get(i), journals["compile"].get(i)
        code = compose["code"]
        rows.append(
            {
                "code": code,
                "ops": json.dumps(labels["ops"]),
                "data_source": DATA_SOURCE,
                "name": f"synth_s{seed}_{i:06d}",
                "hash": content_hash(code),
                "seed": seed,
                "candidate": i,
                "num_ops": len(labels["ops"]),
                "composer": compose.get("composer", "template"),
                "device": device,
                "input_shapes": eager["input_shapes"],
                "output_shapes": eager["output_shapes"],
                "eager_ms": float(eager["eager_ms"]),
                "compile_ms": float(compiled["compile_ms"]),
            }
        )
    return rows


def write_dataset(rows: list[dict], out: Path) -> tuple[Path, Path]:
    """`tasks.parquet` and `tasks.jsonl` in `out` (both replaced whole, never half-written)."""
    parquet, jsonl = out / "tasks.parquet", out / "tasks.jsonl"
    tmp_parquet, tmp_jsonl = parquet.with_suffix(".parquet.tmp"), jsonl.with_suffix(".jsonl.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp_parquet)
    with tmp_jsonl.open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    tmp_parquet.replace(parquet)
    tmp_jsonl.replace(jsonl)
    return parquet, jsonl
