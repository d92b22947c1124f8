"""Batches of candidates in one child: every candidate ends with a verdict, back in the queue, or
unfinished, whatever the child does; a slow one is capped."""

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.batch import COMPILE, FRONT, BatchJob, Item, run_batch
from cuda_agent.synth.filters import FilterConfig
from tests.synth.programs import GOOD, compose_batch, program

WIDE = FilterConfig(window_ms=(0.0, 1e6), threads=1)
SLOW = program("import time\ntime.sleep(120)\nreturn x + 1.0")
CRASH = program("import os\nos._exit(3)")


def _job(items, stage=FRONT, cap_s=60.0, timeout_s=600.0, **kw) -> BatchJob:
    return BatchJob(stage, tuple(items), WIDE, cap_s=cap_s, compose_cap_s=60.0,
                    timeout_s=timeout_s, **kw)  # fmt: skip


def test_a_candidate_over_its_cap_is_a_timeout_and_the_rest_go_back_to_the_queue():
    # the cap leaves GOOD (well under a second alone) room on a loaded 2-core CI machine, where
    # 5 s was once not enough; SLOW sleeps 120 s
    result = run_batch(_job([Item(0, GOOD), Item(1, SLOW), Item(2, GOOD)], cap_s=20.0))
    (s0, r0), (s1, r1) = result.records
    assert (s0, r0["id"], r0["stage"]) == ("eager", 0, "labels") and r0["ok"], r0
    assert (s1, r1["id"], r1["ok"], r1["reason"]) == ("eager", 1, False, "timeout"), r1
    assert result.left == (Item(2, GOOD),) and not result.unfinished


def test_a_candidate_that_kills_its_child_is_a_crash_and_the_rest_go_back_to_the_queue():
    result = run_batch(_job([Item(0, CRASH), Item(1, GOOD)]))
    [(stage, rec)] = result.records
    assert (stage, rec["id"], rec["ok"], rec["reason"]) == ("eager", 0, False, "crashed"), rec
    assert result.left == (Item(1, GOOD),)


def test_the_run_deadline_leaves_candidates_without_a_verdict():
    job = _job([Item(0, SLOW), Item(1, GOOD)], timeout_s=3.0, deadline_cut=True)
    result = run_batch(job)
    assert result.records == () and result.left == ()
    assert result.unfinished == (Item(0, SLOW), Item(1, GOOD))


def test_a_front_batch_composes_as_the_composer_alone_does(catalog, tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(catalog.model_dump_json())
    result = run_batch(_job([Item(4), Item(5)], catalog_path=str(path), seed=3))
    alone = run_isolated(compose_batch, (str(path), 3, [4, 5], "cpu"), timeout_s=600)
    assert alone.ok, alone.error
    composed = [rec for stage, rec in result.records if stage == "compose"]
    drop = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in composed] == alone.value
    checked = [rec["id"] for stage, rec in result.records if stage == "eager"]
    assert checked == [r["id"] for r in alone.value if r["ok"]] and not result.left


def test_a_compile_batch_gives_each_candidate_its_verdict():
    result = run_batch(_job([Item(0, GOOD), Item(1, GOOD)], stage=COMPILE, shared_cache=True))
    assert [(s, r["id"], r["ok"]) for s, r in result.records] == [
        ("compile", 0, True),
        ("compile", 1, True),
    ]
