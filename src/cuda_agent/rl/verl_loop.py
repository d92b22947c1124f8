"""veRL adapter: the agent loops the RL stages run (registered by rl/configs/agent_loops.yaml).

`CudaAgentLoop` plays one multi-turn episode: the policy generates through veRL's rollout
servers, and an `EpisodeSession` (one workspace, the agent's tools, one evaluator) answers each
reply for the whole episode. Tools run in a thread (`asyncio.to_thread`), never on the event loop
that drives the other episodes of the worker.

`ReplayAgentLoop` feeds a stored trajectory through the same token path instead of generating:
with `trainer.critic_warmup` covering the run, veRL's critic is pre-trained on exactly the
episodes the actor was fine-tuned on.

Both keep the token bookkeeping veRL's GAE relies on: model tokens mask 1, tool and template
tokens mask 0, and the response ends on the last model token, because veRL puts the episode's
reward on the response's last token and GAE drops a reward that sits on a mask-0 token.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
from verl.utils.profiler import simple_timer
from verl.utils.py_functional import convert_nested_value_to_list_recursive
from verl.utils.tokenizer.chat_template import apply_chat_template
from verl.utils.tokenizer.tokenizer import normalize_token_ids

from cuda_agent.rl.evaluators import LOCAL, EvaluatorSpec, open_evaluator
from cuda_agent.rl.session import EpisodeSession, SessionConfig
from cuda_agent.task import Task

_CONTEXT = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


class _Stream:
    """One episode's tokens: the prompt, then model tokens (mask 1) and context tokens (mask 0)."""

    def __init__(self, loop: AgentLoopBase, prompt_ids: list[int], logprobs: bool):
        self.loop = loop
        self.ids = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self.mask: list[int] = []
        self.logprobs: list[float] | None = [] if logprobs else None

    async def add_model(self, token_ids: list[int], logprobs: list[float] | None) -> None:
        merged, self.mask, lp = await self.loop.ct_merge_assistant_token(
            self.ids,
            token_ids,
            self.mask,
            self.logprobs,
            assistant_logprobs=logprobs if self.logprobs is not None else None,
        )
        self.ids, self.logprobs = merged.token_ids, lp

    async def add_context(
        self, previous: list[dict], messages: list[dict], tools: list[dict]
    ) -> None:
        merged, self.mask, lp = await self.loop.ct_merge_context_msg(
            previous, messages, self.ids, self.mask, self.logprobs, tools=tools
        )
        self.ids, self.logprobs = merged.token_ids, lp

    def result(self, response_length: int) -> dict[str, Any]:
        """Prompt and response, cut to `response_length` and to the last model token."""
        mask = self.mask[:response_length]
        end = max((i + 1 for i, m in enumerate(mask) if m), default=0)
        response = self.ids[self.prompt_len :][:end]
        return {
            "prompt_ids": self.ids[: self.prompt_len],
            "response_ids": response,
            "response_mask": mask[:end],
            "response_logprobs": self.logprobs[:end] if self.logprobs is not None else None,
        }


@asynccontextmanager
async def _in_thread(manager):
    """Enter and exit a blocking context manager off the event loop."""
    value = await asyncio.to_thread(manager.__enter__)
    try:
        yield value
    except BaseException as err:
        if not await asyncio.to_thread(manager.__exit__, type(err), err, err.__traceback__):
            raise
    else:
        await asyncio.to_thread(manager.__exit__, None, None, None)


def _plain(value: Any) -> Any:
    """Config and dataset values (DictConfig, numpy arrays) as plain Python."""
    if isinstance(value, DictConfig):
        value = OmegaConf.to_container(value, resolve=True)
    return convert_nested_value_to_list_recursive(value)


class _EpisodeLoop(AgentLoopBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.response_length = self.rollout_config.response_length

    def _output(
        self, stream: _Stream, reward: float, turns: int, metrics: dict, extra: dict
    ) -> AgentLoopOutput:
        return AgentLoopOutput(
            **stream.result(self.response_length),
            reward_score=float(reward),
            num_turns=1 + 2 * turns,
            metrics=metrics,
            extra_fields={
                **extra,
                "turn_scores": [],
                "tool_rewards": [],
                "reward_extra_info": {"episode_turns": turns},
            },
        )


class CudaAgentLoop(_EpisodeLoop):
    """A multi-turn kernel-writing episode; the reward is the milestone reward of its best
    verified solution, on the last model token."""

    def __init__(
        self,
        *args,
        evaluator: str = LOCAL,
        evaluator_kwargs: Any = None,
        max_turns: int = 150,
        max_tokens_per_turn: int = 8192,
        bash_timeout_s: float = 300.0,
        observation_chars: int = 16_000,
        profile_at_end: bool = True,
        trajectory_dir: str | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.evaluator = EvaluatorSpec(evaluator, _plain(evaluator_kwargs) or {})
        self.session_config = SessionConfig(
            max_turns=max_turns,
            bash_timeout_s=bash_timeout_s,
            observation_chars=observation_chars,
            profile_at_end=profile_at_end,
        )
        self.max_tokens_per_turn = max_tokens_per_turn
        self.trajectory_dir = Path(trajectory_dir) if trajectory_dir else None
        self._stop_ids = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id} - {None}

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        task = Task.from_record(_plain(kwargs["extra_info"])["task"])
        messages = [dict(m) for m in _plain(kwargs["raw_prompt"])]
        request_id = uuid4().hex
        trajectory = None
        if self.trajectory_dir is not None:
            trajectory = self.trajectory_dir / f"{task.name}-{request_id[:12]}.jsonl"
        async with (
            _in_thread(open_evaluator(self.evaluator)) as evaluator,
            _in_thread(tempfile.TemporaryDirectory(prefix="cuda-agent-rl-")) as tmp,
        ):
            session = await asyncio.to_thread(
                EpisodeSession,
                task,
                Path(tmp) / "workspace",
                evaluator,
                self.session_config,
                trajectory,
            )
            return await self._play(session, messages, sampling_params, request_id)

    async def _play(
        self, session: EpisodeSession, messages: list[dict], sampling_params: dict, request_id: str
    ) -> AgentLoopOutput:
        tools = session.tools
        await asyncio.to_thread(
            session.start, messages, str(self.config.actor_rollout_ref.model.path)
        )
        stream = _Stream(
            self,
            await self.ct_build_initial_tokens(messages, tools=tools),
            bool(sampling_params.get("logprobs")),
        )
        metrics: dict[str, float] = {}
        extra: dict[str, Any] = {}
        reason = "turn_budget"
        while not session.done:
            room = self.response_length - len(stream.mask)
            if room <= 0:
                reason = "token_budget"
                break
            params = {**sampling_params, "max_tokens": min(self.max_tokens_per_turn, room)}
            with simple_timer("generate_sequences", metrics):
                out = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=stream.ids, sampling_params=params
                )
            extra = {
                **out.extra_fields,
                **extra,
                "max_global_steps": out.extra_fields.get("max_global_steps"),
            }
            prompt_tokens = len(stream.ids)
            await stream.add_model(out.token_ids, out.log_probs)
            text = await asyncio.to_thread(self._decode, out.token_ids)
            with simple_timer("tool_calls", metrics):
                outcome = await asyncio.to_thread(
                    session.turn, text, prompt_tokens, len(out.token_ids)
                )
            if outcome.ends_episode:
                reason = "submitted"
                break
            messages.append(outcome.assistant)
            if session.done:
                break
            previous = list(messages)
            messages.extend(outcome.results)
            await stream.add_context(previous, messages, tools)
        with simple_timer("tool_calls", metrics):
            reward = await asyncio.to_thread(session.finish, reason)
        return self._output(stream, reward, session.turns, metrics, extra)

    def _decode(self, token_ids: list[int]) -> str:
        kept = [t for t in token_ids if t not in self._stop_ids]
        return self.tokenizer.decode(kept, skip_special_tokens=False)


class ReplayAgentLoop(_EpisodeLoop):
    """A stored episode (rl.sft.replay_row) through the rollout's token path, with its reward."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        replay = json.loads(_plain(kwargs["extra_info"])["replay"])
        turns, tools = replay["turns"], replay["tools"]
        messages = [dict(m) for m in _plain(kwargs["raw_prompt"])]
        stream = _Stream(self, await self.ct_build_initial_tokens(messages, tools=tools), False)
        replies, i = 0, 0
        while i < len(turns):
            assistant = turns[i]
            i += 1
            await stream.add_model(await asyncio.to_thread(self._reply_tokens, assistant), None)
            replies += 1
            messages.append(assistant)
            results = []
            while i < len(turns) and turns[i]["role"] != "assistant":
                results.append(turns[i])
                i += 1
            if i >= len(turns) or len(stream.mask) >= self.response_length:
                break  # what follows the last reply teaches nothing
            previous = list(messages)
            messages.extend(results)
            await stream.add_context(previous, messages, tools)
        # No rollout weights made these tokens: they count as the replaying step's own, which
        # veRL's trainer reads as each trajectory's first and last weights version.
        step = kwargs.get("global_steps")  # a row's field: a number or a 0-d tensor
        step = None if step is None else int(step)
        versions = {"min_global_steps": step, "max_global_steps": step}
        return self._output(stream, replay["reward"], replies, {}, versions)

    def _reply_tokens(self, assistant: dict) -> list[int]:
        """The tokens the policy generates for `assistant`: the chat template's rendering after
        the generation prompt, up to and including the end-of-turn token."""
        kwargs = self.apply_chat_template_kwargs
        prefix = normalize_token_ids(
            apply_chat_template(
                self.tokenizer, _CONTEXT, add_generation_prompt=True, tokenize=True, **kwargs
            )
        )
        full = normalize_token_ids(
            apply_chat_template(
                self.tokenizer,
                [*_CONTEXT, assistant],
                add_generation_prompt=False,
                tokenize=True,
                **kwargs,
            )
        )
        if full[: len(prefix)] != prefix:
            raise ValueError(
                "the chat template renders the generation prompt differently from a reply"
            )
        reply = full[len(prefix) :]
        eos = self.tokenizer.eos_token_id
        ends = [j for j, t in enumerate(reply) if t == eos]
        return reply[: ends[-1] + 1] if ends else reply
