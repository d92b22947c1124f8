"""veRL adapter: veRL's multi-turn SFT dataset over the JSON-text columns `rl.sft` writes.

Everything else (tokenizing turn by turn, training only the assistant tokens, padding,
truncation) is veRL's `MultiTurnSFTDataset`; this only decodes `messages` and `tools` (why they
are text: see `cuda_agent.rl.sft`). Select it with
`data.custom_cls.path=pkg://cuda_agent.rl.verl_sft data.custom_cls.name=JsonMultiTurnSFTDataset`.
"""

from __future__ import annotations

import json

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset


class JsonMultiTurnSFTDataset(MultiTurnSFTDataset):
    def _read_files_and_process(self):
        super()._read_files_and_process()
        self.messages = [_decoded(m) for m in self.messages]
        if self.tools is not None:
            self.tools = [_decoded(t) for t in self.tools]

    def _build_messages(self, example: dict):
        return super()._build_messages(
            {**example, self.messages_key: _decoded(example[self.messages_key])}
        )


def _decoded(value):
    return json.loads(value) if isinstance(value, str) else value
