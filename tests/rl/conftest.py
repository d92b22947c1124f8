"""Fixtures of the RL tests: the tiny model, shared by every test of the session."""

from __future__ import annotations

import pytest

from tests.rl.tiny_model import make_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)
