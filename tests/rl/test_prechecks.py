"""What `cuda-agent train` checks of --model before anything starts (real folders)."""

from __future__ import annotations

import pytest

from cuda_agent.errors import UserError
from cuda_agent.rl import check_model


def test_a_model_folder_passes(tiny_model):
    assert check_model(str(tiny_model)) is None


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda root: root / "missing", "no such folder, and not a hub id"),
        (lambda root: root, "no config.json there, not a model folder"),
        (lambda root: (root / "f").write_text("x") and root / "f", "a file, not a model folder"),
    ],
)
def test_what_is_no_model_is_refused_in_one_line(tmp_path, make, said):
    path = make(tmp_path)
    with pytest.raises(UserError, match=f"--model {path}: {said}; give a Hugging Face model"):
        check_model(str(path))


def test_a_hub_id_offline_is_noted_not_refused(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    note = check_model("cuda-agent-tests/not-downloaded", "--critic")
    assert note.startswith("--critic cuda-agent-tests/not-downloaded: not in the local Hugging")
    assert "cannot be checked offline" in note
