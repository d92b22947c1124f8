"""The report of a crafted run: markdown, HTML, figures; the page opened in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cuda_agent.bench.report import write_report
from cuda_agent.bench.store import MISSING, MODEL_ERROR, RunMeta, RunStore, TaskResult
from cuda_agent.sandbox import MethodTimes, Solution, Status
from cuda_agent.task import Task, TaskSource
from tests.bench.conftest import verdict

PROGRAM = """import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) + {n}
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
"""
KERNEL = "__global__ void relu_kernel(const float* x, float* y, int n) { /* <relu> */ }\n"


def kb_task(level: int, pid: int) -> Task:
    name = f"L{level}_{pid}_Op"
    source = TaskSource("kernelbench", f"level{level}/{pid}_Op.py", level=level, problem_id=pid)
    return Task(name=name, code=PROGRAM.format(n=pid), source=source)


def crafted_run(root: Path) -> RunStore:
    store = RunStore(root)
    store.start(RunMeta(kind="agent", tasks="kernelbench", model="m", base_url="http://x"))
    cases = [
        (kb_task(1, 19), verdict("L1_19_Op", True, 2.5, 1.8, input_distribution="signed")),
        (kb_task(1, 23), verdict("L1_23_Op", True, 0.9, 0.7, input_distribution="task")),
        (kb_task(2, 5), verdict("L2_5_Op", status=Status.COMPILE_ERROR, message="k.cu:3: error")),
        (kb_task(3, 1), verdict("L3_1_Op", True, 1.3, 1.1, degenerate=True)),
    ]
    for task, v in cases:
        solution = Solution(files={"model_new.py": "class ModelNew: ...\n", "kernels/k.cu": KERNEL})
        store.save_solution(task.name, solution)
        traj = store.trajectory_path(task.name)
        traj.parent.mkdir(parents=True, exist_ok=True)
        traj.write_text(
            json.dumps(
                {
                    "type": "episode",
                    "task": {"name": task.name},
                    "model": "m",
                    "messages": [{"role": "user", "content": "make it fast"}],
                }
            )
            + "\n"
            + json.dumps(
                {
                    "type": "turn",
                    "index": 0,
                    "assistant": {"content": "writing <kernel>", "tool_calls": []},
                    "observations": [{"name": "bash", "content": "ok", "ok": True}],
                }
            )
            + "\n"
        )
        rel = traj.relative_to(root).as_posix()
        store.record(TaskResult.of(task, v, solution=solution, trajectory=rel))
    missing = kb_task(2, 7)
    store.record(TaskResult.of(missing, verdict("L2_7_Op", status=Status.INVALID), status=MISSING))
    return store


def test_report_files_and_content(tmp_path):
    crafted_run(tmp_path)
    files = write_report(tmp_path)
    md = files.markdown.read_text()
    assert "## Level L1" in md and "## Level L2" in md and "## Level L3" in md
    assert "## Overall (levels weighted by task count)" in md
    # L1: both correct, one faster than compile (2.5/1.8 vs 0.9/0.7) -> 50.0 %
    l1 = md.split("## Level L1")[1].split("##")[0]
    assert "| this run | 2 | 100.0 % | 50.0 % |" in l1
    paper_l1 = next(line for line in l1.splitlines() if line.startswith("| CUDA Agent (paper) |"))
    # Table 1, level 1: pass 100, faster than eager 99, faster than torch.compile 97, 2.48x, 1.87x
    assert paper_l1.startswith("| CUDA Agent (paper) | — | 100.0 % | 99.0 % | — | 97.0 % | — |")
    assert "| 2.48x | — | 1.87x | — | — |" in paper_l1
    overall = md.split("## Overall")[1].split("##")[0]
    assert "| Claude Opus 4.5 (paper) | — | 95.2 % | 90.4 % |" in overall
    assert "| CUDA Agent w/o RFT (paper) | — | 95.6 % | — | — | 49.8 % |" in overall
    assert "could not be retrieved" not in md and "Table 1 says 97, 100 and 90" in md
    assert "main_results.png" in md and "how they treat failed tasks is not stated" in md
    assert "L1_19_Op: signed" in md  # scored on re-drawn inputs
    assert "L1_23_Op: task" not in md  # the task's own inputs are not listed as re-drawn
    assert "- L3_1_Op" in md.split("Degenerate")[1]
    assert "| missing | 1 |" in md
    tasks = md.split("Tasks")[-1]
    assert "| task | level | status | compiled | reward |" in tasks
    assert "| L2_7_Op | L2 | missing | no | -1 |" in tasks  # nothing was built for it
    for figure in files.figures:
        assert figure.stat().st_size > 5000  # a real PNG, not an empty canvas
    html = files.html.read_text()
    assert "&lt;relu&gt;" in html and "<relu>" not in html  # kernel source shown, escaped
    assert "writing &lt;kernel&gt;" in html  # the trajectory, escaped
    assert html.count('<details class="task"') == 5


def test_model_errors_are_shown_apart_not_scored(tmp_path):
    store = crafted_run(tmp_path)
    broken_off = verdict("L1_40_Op", status=Status.INVALID, message="the endpoint failed")
    store.record(TaskResult.of(kb_task(1, 40), broken_off, status=MODEL_ERROR))
    md = write_report(tmp_path).markdown.read_text()
    l1 = md.split("## Level L1")[1].split("##")[0]
    assert "| this run | 2 | 100.0 % | 50.0 % |" in l1  # scored as if L1_40 were not there
    assert "1 tasks are not scored: the model endpoint failed during their episodes" in md
    assert "(model_error: L1_40_Op)" in md and "| model_error | 1 |" in md


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run(
        [binary, *flags, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_report_renders_in_headless_chromium(tmp_path):
    binary = _chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must apt-get install chromium")
        pytest.skip("chromium is not installed (apt-get install -y chromium); CI requires it")
    run = tmp_path / "run"
    crafted_run(run)
    page = write_report(run).html.resolve().as_uri()
    shot = tmp_path / "page.png"
    done = _run_chromium(
        binary, tmp_path / "profile1", f"--screenshot={shot}", "--window-size=1280,1600", page
    )
    assert shot.is_file(), done.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1200
    assert float(pixels[..., :3].std()) > 0.05  # text, tables and figures, not a blank page
    dom = _run_chromium(binary, tmp_path / "profile2", "--dump-dom", page).stdout
    assert dom.count('<table class="metrics">') >= 7  # 3 levels + overall + fast_p, reward, status
    assert 'id="tasks"' in dom and "L2_5_Op" in dom
    assert 'src="report_files/fast_p.png"' in dom


def test_paper_rows_stand_only_beside_groups_they_describe(tmp_path):
    store = RunStore(tmp_path)
    store.start(RunMeta(kind="agent", tasks="mixed", model="m", base_url="http://x"))
    store.record(TaskResult.of(kb_task(1, 19), verdict("L1_19_Op", True, 2.5, 1.8)))
    other = Task(name="mine", code=PROGRAM.format(n=0), source=TaskSource("file", "mine.py"))
    store.record(TaskResult.of(other, verdict("mine", True, 1.2, 1.1)))
    md = write_report(tmp_path).markdown.read_text()

    def paper_rows(title: str) -> list[str]:
        table = md.split(f"## {title}")[1].split("##")[0]
        return [line for line in table.splitlines() if line.startswith("| ") and "(paper)" in line]

    assert len(paper_rows("Level L1")) == 6
    assert paper_rows("Overall") == []  # this overall is not over levels 1-3
    assert paper_rows("Level other") == []


def test_the_report_names_the_timing_method_and_the_launch_bound_tasks(tmp_path):
    store = RunStore(tmp_path)
    store.start(RunMeta(kind="solutions", tasks="kernelbench", solutions="s", timing="events"))

    def timings(by_events: float, by_kernels: float) -> dict:
        return {
            "events": MethodTimes(eager_ms=by_events, compile_ms=by_events, candidate_ms=1.0,
                                  speedup_vs_eager=by_events, speedup_vs_compile=by_events),
            "kernels": MethodTimes(eager_ms=by_kernels, compile_ms=by_kernels, candidate_ms=1.0,
                                   speedup_vs_eager=by_kernels, speedup_vs_compile=by_kernels),
        }  # fmt: skip

    small = verdict(
        "L1_30_Op", True, 1.3, 1.3, timing="events", timings=timings(1.3, 3.0),
        launch_bound=True, eager_launch_ms=0.025,
    )  # fmt: skip
    large = verdict("L1_19_Op", True, 2.0, 2.0, timing="events", timings=timings(2.0, 2.0))
    for task, v in ((kb_task(1, 30), small), (kb_task(1, 19), large)):
        store.record(TaskResult.of(task, v))
    files = write_report(tmp_path)
    md = files.markdown.read_text()
    assert "Times, speed-ups and rewards are by the events timing method." in md
    assert "1 tasks are launch-bound (listed below)." in md
    section = md.split("## Launch-bound tasks", 1)[1].split("##", 1)[0]
    assert "- L1_30_Op" in section and "L1_19_Op" not in section
    # the other method's geometric mean beside the run's: (1.3 * 2.0) ** 0.5 and (3.0 * 2.0) ** 0.5
    assert "| events (this run's) | 2 | 1.61x | 1.61x |" in md
    assert "| kernels | 2 | 2.45x | 2.45x |" in md
    html = files.html.read_text()
    assert 'id="launch-bound"' in html and "L1_30_Op" in html and 'id="methods"' in html


def test_tasks_with_several_samples_get_pass_at_k_and_best_of_k(tmp_path):
    """Headline figures over each task's lowest sample; the Samples table adds the best sample
    per task (pass@k, best-of-k) and pass@1, the mean share of correct samples."""
    store = RunStore(tmp_path)
    store.start(RunMeta(kind="solutions", tasks="kernelbench", solutions="s", timing="events"))
    relu, softmax = kb_task(1, 19), kb_task(1, 23)
    for task, sample, v in (
        (relu, 0, verdict("L1_19_Op", status=Status.COMPILE_ERROR)),
        (relu, 1, verdict("L1_19_Op", True, 2.0, 1.5)),
        (relu, 2, verdict("L1_19_Op", True, 4.0, 3.0)),
        (softmax, 0, verdict("L1_23_Op", True, 1.2, 0.8)),
        (softmax, 1, verdict("L1_23_Op", status=Status.MISMATCH)),
    ):
        store.record(TaskResult.of(task, v, sample=sample))
    md = write_report(tmp_path).markdown.read_text()
    assert "2 tasks finished (5 samples; see Samples)" in md
    section = md.split("## Samples", 1)[1].split("##", 1)[0]
    # lowest samples: relu failed, softmax 1.2x eager / 0.8x compile
    assert (
        "| each task's lowest sample (the figures above) | 2 | 5 | 50.0 % | 0.0 % | 1.20x | 0.80x |"
        in section
    )
    # best samples: relu's third (4x, 3x), softmax's first: geomeans (4*1.2)**.5, (3*.8)**.5
    assert (
        "| each task's best sample (pass@k, best-of-k) | 2 | 5 | 100.0 % | 50.0 % | 2.19x | 1.55x |"
        in section
    )
    assert (
        "| pass@1 (the mean share of correct samples) | 2 | 5 | 58.3 % |" in section
    )  # (2/3+1/2)/2
    level = md.split("## Level L1", 1)[1].split("##", 1)[0]
    assert "| this run | 2 | 50.0 % |" in level  # the headline is the lowest samples'
    tasks = md.split("## Tasks", 1)[1]
    assert all(f"L1_19_Op.sample_{k}" in tasks for k in (0, 1, 2))


def test_one_sample_per_task_has_no_samples_section(tmp_path):
    crafted_run(tmp_path)
    assert "## Samples" not in write_report(tmp_path).markdown.read_text()
