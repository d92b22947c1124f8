"""`cuda-agent synth`'s option errors and notes, as a user sees them."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console

from cuda_agent.cli.main import main
from cuda_agent.cli.synth_cmd import print_notes
from cuda_agent.synth.catalog.hf_ops import MISSING


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--n", "0"), "error: --n 0: must be greater than 0\n"),
        (("--n", "3", "--workers", "0"), "error: --workers 0: must be greater than 0\n"),
    ],
)
def test_a_bad_number_names_its_option(monkeypatch, capsys, tmp_path, args, said):
    argv = ["cuda-agent", "synth", *args, "--out", str(tmp_path / "s"), "--device", "cpu"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2 and capsys.readouterr().err == said
    assert not (tmp_path / "s").exists()


def test_the_missing_extra_note_keeps_its_pip_extra():
    out = io.StringIO()
    print_notes(Console(file=out, width=200), [MISSING])
    assert "pip install 'cuda-agent[synth]'" in out.getvalue()
