import json

from cuda_agent.sandbox import Stage, Status, Verdict

FIELDS = {
    "compiled",
    "correct",
    "status",
    "violations",
    "eager_ms",
    "compile_ms",
    "candidate_ms",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "reward",
    "message",
}


def test_verdict_json_has_the_schema_fields():
    v = Verdict(
        task="t",
        task_hash="h",
        stage=Stage.PROFILE,
        status=Status.OK,
        compiled=True,
        correct=True,
        eager_ms=2.0,
        compile_ms=1.0,
        candidate_ms=0.5,
        speedup_vs_eager=4.0,
        speedup_vs_compile=2.0,
        reward=3,
        message="fine",
    )
    data = json.loads(v.model_dump_json())
    assert FIELDS <= data.keys()
    assert data["status"] == "ok" and data["reward"] == 3
    assert Verdict.model_validate_json(v.model_dump_json()) == v
    assert "4.00x" in v.summary() and "reward 3" in v.summary()


def test_status_words():
    assert {s.value for s in Status} >= {
        "ok",
        "compile_error",
        "runtime_error",
        "timeout",
        "mismatch",
        "violation",
        "no_gpu",
    }
