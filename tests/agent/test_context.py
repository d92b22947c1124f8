"""Shortening old observations when the context nears its budget."""

from __future__ import annotations

from cuda_agent.agent.context import Context


def conversation(turns: int, size: int) -> Context:
    context = Context(
        [{"role": "system", "content": "s" * 400}],
        max_tokens=10_000,
        reserve=500,
        shorten_at=0.85,
        shorten_to=0.6,
        keep_recent_turns=2,
    )
    for turn in range(turns):
        assistant = {"role": "assistant", "content": f"turn {turn}"}
        context.add_turn(
            turn, assistant, [{"role": "tool", "tool_call_id": f"c{turn}", "content": "o" * size}]
        )
    return context


def test_small_contexts_are_left_alone():
    context = conversation(turns=3, size=1000)
    before = [dict(m) for m in context.messages]
    assert context.fit(turn=3) and context.messages == before and context.shortened == 0


def test_old_observations_are_shortened_recent_ones_kept():
    context = conversation(turns=8, size=6000)  # 8 x 1500 tokens: over the 10K budget
    assert context.tokens() > 10_000
    assert context.fit(turn=8)
    assert context.tokens() <= 0.6 * 10_000 - 500
    tools = [m for m in context.messages if m["role"] == "tool"]
    assert "shortened to fit the context" in tools[0]["content"]
    assert all(m["content"] == "o" * 6000 for m in tools[-2:])  # the last two turns stay whole
    assert context.shortened >= 1


def test_calibration_scales_the_estimate():
    context = conversation(turns=1, size=400)
    estimate = context.tokens()
    context.calibrate(prompt_tokens=2 * estimate, sent=context.messages)
    assert context.tokens() == 2 * estimate


def test_a_context_that_cannot_fit_says_so():
    context = conversation(turns=3, size=20_000)  # only recent turns, each too big on its own
    assert not context.fit(turn=3)
