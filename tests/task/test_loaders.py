import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cuda_agent.task import BUILTIN_DIR, TaskError, load_task, load_tasks
from tests.conftest import FIXTURE_KERNELBENCH_JSONL, kernelbench_or_skip

GOOD = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
"""


def test_builtin_set_has_the_kinds_of_work():
    tasks = load_tasks()
    names = {t.name for t in tasks}
    assert len(tasks) >= 10
    for kind in (
        "elementwise_chain",
        "row_sum_squares",
        "scaled_softmax",
        "residual_layernorm",
        "gemm_bias_gelu",
        "conv_bias_relu",
        "causal_attention",
        "mlp_3layer",
    ):
        assert kind in names
    assert all(t.source.kind == "builtin" and t.ops for t in tasks)
    assert len({t.hash for t in tasks}) == len(tasks)


def test_single_file_and_builtin_by_name(tmp_path):
    f = tmp_path / "relu.py"
    f.write_text(GOOD)
    [task] = load_tasks(f)
    assert task.name == "relu" and task.source.kind == "file" and task.code == GOOD
    assert load_task(f).hash == task.hash
    assert load_task("builtin/scaled_softmax").name == "scaled_softmax"
    assert load_task("rmsnorm").source.kind == "builtin"


def test_hash_follows_content_not_name(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text(GOOD)
    (tmp_path / "c.py").write_text(GOOD.replace("relu", "sigmoid"))
    a, b, c = load_tasks(tmp_path)
    assert a.hash == b.hash != c.hash


def test_kernelbench_all_levels():
    tasks = load_tasks(kernelbench_or_skip(), levels={1, 2, 3})
    assert len(tasks) == 250
    by_level = {lv: sum(t.level == lv for t in tasks) for lv in (1, 2, 3)}
    assert by_level == {1: 100, 2: 100, 3: 50}
    first = tasks[0]
    assert first.name == "L1_1_Square_matrix_multiplication_"
    assert (first.source.level, first.source.problem_id) == (1, 1)


def test_kernelbench_selection():
    tasks = load_tasks(kernelbench_or_skip(), levels={2}, problem_ids={12, 17})
    assert [t.name for t in tasks] == [
        "L2_12_Gemm_Multiply_LeakyReLU",
        "L2_17_Conv2d_InstanceNorm_Divide",
    ]


def test_kernelbench_checkout(tmp_path):
    rows = [json.loads(line) for line in FIXTURE_KERNELBENCH_JSONL.read_text().splitlines()[:3]]
    level1 = tmp_path / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    for row in rows:
        (level1 / f"{row['name']}.py").write_text(row["code"])
    (tmp_path / "KernelBench" / "level2").mkdir()
    tasks = load_tasks(tmp_path)
    assert [t.source.problem_id for t in tasks] == [1, 2, 10]
    assert tasks[0].name == "L1_1_Elementwise_ReLU"
    assert load_tasks(tmp_path / "KernelBench", problem_ids={2})[0].source.problem_id == 2


def test_parquet_with_ops6k_schema(tmp_path):
    path = tmp_path / "ops.parquet"
    table = pa.table(
        {
            "code": [GOOD, GOOD.replace("relu", "tanh")],
            "ops": ['["torch.relu"]', '["torch.tanh"]'],
            "data_source": ["cuda-agent-ops", "cuda-agent-ops"],
        }
    )
    pq.write_table(table, path)
    tasks = load_tasks(path)
    assert [t.ops for t in tasks] == [("torch.relu",), ("torch.tanh",)]
    assert tasks[1].source.row == 1 and tasks[1].source.data_source == "cuda-agent-ops"


def test_folder_of_builtin_copies(tmp_path):
    shutil.copytree(BUILTIN_DIR, tmp_path / "b")
    assert len(load_tasks(tmp_path / "b")) == len(load_tasks())


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (GOOD.replace("class Model", "class Net"), "missing Model"),
        (GOOD.replace("def get_inputs", "def inputs"), "missing get_inputs"),
        (GOOD.replace("def get_init_inputs", "def init"), "missing get_init_inputs"),
        (GOOD.replace("return torch.relu(x)", "return (x"), "syntax error at line"),
        (GOOD.replace("def forward", "def run"), "has no forward() method"),
        ("", "the program is empty"),
    ],
)
def test_malformed_file_names_file_and_problem(tmp_path, code, message):
    f = tmp_path / "bad.py"
    f.write_text(code)
    with pytest.raises(TaskError) as err:
        load_tasks(f)
    text = str(err.value)
    assert str(f) in text and message in text and "\n" not in text


def test_malformed_jsonl_names_row(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"code": GOOD}) + "\n" + json.dumps({"src": GOOD}) + "\n")
    with pytest.raises(TaskError, match=r"d\.jsonl:2: missing field 'code'"):
        load_tasks(path)
    path.write_text(json.dumps({"code": GOOD}) + "\n{not json\n")
    with pytest.raises(TaskError, match=r"d\.jsonl:2: not valid JSON"):
        load_tasks(path)
    path.write_text(json.dumps({"code": GOOD.replace("get_inputs", "gi")}) + "\n")
    with pytest.raises(TaskError, match=r"d\.jsonl:1: missing get_inputs"):
        load_tasks(path)


def test_empty_datasets(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(TaskError, match="the dataset is empty"):
        load_tasks(tmp_path / "e.jsonl")
    pq.write_table(pa.table({"code": pa.array([], pa.string())}), tmp_path / "e.parquet")
    with pytest.raises(TaskError, match="the dataset is empty"):
        load_tasks(tmp_path / "e.parquet")


def test_parquet_missing_column_and_bad_row(tmp_path):
    pq.write_table(pa.table({"source": [GOOD]}), tmp_path / "m.parquet")
    with pytest.raises(TaskError, match=r"missing column 'code' \(has: source\)"):
        load_tasks(tmp_path / "m.parquet")
    pq.write_table(pa.table({"code": [GOOD, "x = ("]}), tmp_path / "r.parquet")
    with pytest.raises(TaskError, match=r"r\.parquet row 1: syntax error"):
        load_tasks(tmp_path / "r.parquet")


def test_bad_paths_and_selections(tmp_path):
    with pytest.raises(TaskError, match="no such file or folder"):
        load_tasks(tmp_path / "nope.py")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(TaskError, match="unknown task format"):
        load_tasks(tmp_path / "notes.txt")
    with pytest.raises(TaskError, match="folder holds no .py task files"):
        load_tasks(tmp_path)
    with pytest.raises(TaskError, match="these tasks have no level"):
        load_tasks(levels={1})
    with pytest.raises(TaskError, match="no task matches"):
        load_tasks(FIXTURE_KERNELBENCH_JSONL, levels={1}, problem_ids={999})
    with pytest.raises(TaskError, match="no such task file"):
        load_task("not_a_task")
