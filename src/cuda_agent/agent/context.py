"""The live conversation and its token budget: near the limit, old observations are shortened
(head and tail kept) so the episode can go on; the trajectory keeps them whole."""

from __future__ import annotations

from cuda_agent.agent.model import estimate_message_tokens

LIMITS = (2000, 400)  # characters an old observation is cut to: first pass, then second
MIN_RATIO, MAX_RATIO = 0.25, 4.0


def shorten_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    note = f"[... {omitted} characters shortened to fit the context ...]"
    return f"{text[:half]}\n{note}\n{text[-half:]}"


class Context:
    """Messages as the model sees them, which of them are observations, and a calibration of the
    text-length estimate against the server's own token counts."""

    def __init__(
        self,
        messages: list[dict],
        max_tokens: int,
        reserve: int,
        shorten_at: float,
        shorten_to: float,
        keep_recent_turns: int,
    ):
        self.messages = list(messages)
        self.max_tokens = max_tokens
        self.reserve = reserve
        self.shorten_at = shorten_at
        self.shorten_to = shorten_to
        self.keep_recent_turns = keep_recent_turns
        self.ratio = 1.0  # server tokens per estimated token
        self.shortened = 0  # observations shortened so far
        self._observations: list[tuple[int, int]] = []  # (turn, index into messages)

    def add_turn(self, turn: int, assistant: dict, results: list[dict]) -> None:
        self.messages.append(assistant)
        for message in results:
            self._observations.append((turn, len(self.messages)))
            self.messages.append(message)

    def calibrate(self, prompt_tokens: int, sent: list[dict]) -> None:
        """Learn how the server's token counts relate to the estimate, from one request."""
        estimate = estimate_message_tokens(sent)
        if estimate > 0 and prompt_tokens > 0:
            self.ratio = min(MAX_RATIO, max(MIN_RATIO, prompt_tokens / estimate))

    def tokens(self) -> int:
        return round(estimate_message_tokens(self.messages) * self.ratio)

    def fit(self, turn: int) -> bool:
        """Shorten old observations when the next request would come near the limit; False when
        even that leaves no room for a reply."""
        if self.tokens() + self.reserve <= self.shorten_at * self.max_tokens:
            return True
        target = self.shorten_to * self.max_tokens - self.reserve
        keep_from = turn - self.keep_recent_turns
        for limit in LIMITS:
            for owner, index in self._observations:
                if owner >= keep_from:
                    break
                message = self.messages[index]
                if len(message["content"]) > limit:
                    short = shorten_text(message["content"], limit)
                    self.messages[index] = {**message, "content": short}
                    self.shortened += 1
                if self.tokens() <= target:
                    return True
        return self.tokens() + self.reserve <= self.max_tokens
