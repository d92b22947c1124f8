import pytest

from cuda_agent.sandbox import milestone_reward


@pytest.mark.parametrize(
    ("correct", "vs_eager", "vs_compile", "reward"),
    [
        (False, 10.0, 10.0, -1),
        (True, 1.06, 1.06, 3),
        (True, 1.05, 1.06, 1),  # exactly 5 % is not "more than 5 %"
        (True, 1.2, 1.05, 2),
        (True, 1.2, 0.5, 2),
        (True, 0.9, 1.2, 1),  # faster than compile but not than eager
        (True, None, None, 1),
    ],
)
def test_milestones(correct, vs_eager, vs_compile, reward):
    assert milestone_reward(correct, vs_eager, vs_compile) == reward
