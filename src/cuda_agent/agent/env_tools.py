"""The environment's tools: compile, verify and profile the workspace as it is now; submit."""

from __future__ import annotations

from typing import ClassVar

from cuda_agent.agent.tools import ToolContext, ToolFailure, ToolOutput, schema
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Stage, Status, Verdict, read_solution

_STAGE_DOES = {
    Stage.COMPILE: "the static guard and the build",
    Stage.VERIFY: "the build, then correctness against the reference on fresh inputs",
    Stage.PROFILE: "the build, correctness, then timing against eager PyTorch and torch.compile",
}


def passed(verdict: Verdict) -> bool:
    """Whether the verdict is what its stage asked for."""
    if verdict.stage == Stage.COMPILE:
        return verdict.compiled and verdict.status in (Status.OK, Status.NO_GPU)
    return verdict.correct and verdict.status == Status.OK


class _Evaluate:
    stage: ClassVar[Stage]
    parameters: ClassVar[dict] = schema({})

    def run(self, ctx: ToolContext) -> ToolOutput:
        try:
            solution = read_solution(ctx.root)
        except UserError as err:
            raise ToolFailure(f"the workspace is not a solution yet: {err}") from None
        verdict = ctx.evaluator.evaluate(ctx.task, solution, self.stage)
        return ToolOutput(
            f"[{self.stage.value}] {verdict.summary()}",
            ok=passed(verdict),
            verdict=verdict,
            solution=solution,
        )


class Compile(_Evaluate):
    name: ClassVar[str] = "compile"
    stage: ClassVar[Stage] = Stage.COMPILE
    description: ClassVar[str] = (
        f"Run {_STAGE_DOES[Stage.COMPILE]} on the workspace; returns the verdict "
        "(compiler errors trimmed to the first ones, with file:line)."
    )


class Verify(_Evaluate):
    name: ClassVar[str] = "verify"
    stage: ClassVar[Stage] = Stage.VERIFY
    description: ClassVar[str] = f"Run {_STAGE_DOES[Stage.VERIFY]}; returns the verdict."


class Profile(_Evaluate):
    name: ClassVar[str] = "profile"
    stage: ClassVar[Stage] = Stage.PROFILE
    description: ClassVar[str] = (
        f"Run {_STAGE_DOES[Stage.PROFILE]}; returns times, speed-ups and the reward."
    )


class Submit:
    name: ClassVar[str] = "submit"
    description: ClassVar[str] = (
        "End the episode. The answer is the best verified solution of the episode (the final "
        "workspace is profiled too), so submit when you cannot make it faster."
    )
    parameters: ClassVar[dict] = schema({})

    def run(self, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("submitted; the episode ends", ends_episode=True)
