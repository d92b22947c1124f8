"""Fixtures of the RL tests: the tiny models, made once for the whole pytest run."""

from __future__ import annotations

import pytest

from tests.rl.tiny_model import make_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def teachable_model(tmp_path_factory):
    """Big enough to learn the teaching episodes of a few tasks by heart (pre_rft_1gpu)."""
    return make_tiny_model(tmp_path_factory.mktemp("teachable-model"), hidden=256, layers=4)


@pytest.fixture(scope="session")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)
