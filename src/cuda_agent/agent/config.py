"""Configuration of the model client and of the agent loop, as data (stored in every trajectory)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

TRAINING_TURNS = 150
EVALUATION_TURNS = 200
CONTEXT_TOKENS = 128_000
REQUEST_TIMEOUT_S = 300.0  # one completion of thousands of tokens on a loaded server


class ModelConfig(BaseModel):
    """How to reach an OpenAI-compatible chat-completions endpoint (vLLM, SGLang, hosted)."""

    model_config = ConfigDict(frozen=True)

    model: str
    base_url: str
    api_key_env: str | None = None  # the name of the variable holding the key, never the key
    text_tools: bool = False  # tool calls as <tool_call> blocks in text, for servers without tools
    temperature: float | None = None
    max_tokens: int | None = None  # per completion; None leaves it to the server
    timeout_s: float = REQUEST_TIMEOUT_S  # per request
    max_retries: int = 5  # on transient errors only (429, 5xx, timeouts, connection errors)
    backoff_s: float = 2.0  # first wait; doubles each retry
    max_backoff_s: float = 60.0


class AgentConfig(BaseModel):
    """Budgets and knobs of one episode."""

    model_config = ConfigDict(frozen=True)

    max_turns: int = Field(default=EVALUATION_TURNS, ge=1)
    max_context_tokens: int = Field(default=CONTEXT_TOKENS, ge=1)
    max_seconds: float | None = 4 * 3600.0  # wall time of the episode; None: unlimited
    reserve_tokens: int = 4096  # room kept for the completion when max_tokens is unset
    shorten_at: float = 0.85  # shorten old observations when the context passes this fraction
    shorten_to: float = 0.6  # ... and keep shortening until it is under this one
    keep_recent_turns: int = 4  # observations of the last turns are never shortened
    bash_timeout_s: float = 300.0
    observation_chars: int = 16_000  # longest observation kept whole (head and tail otherwise)
    profile_at_end: bool = True  # profile the final workspace (and the best) before scoring

    @classmethod
    def for_training(cls, **overrides) -> AgentConfig:
        """The paper's RL setting: up to 150 turns."""
        return cls(**{"max_turns": TRAINING_TURNS, **overrides})
