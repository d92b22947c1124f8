"""Every place a command writes is checked before its work starts: a read-only folder, a path
through a file or onto one is one line naming the path and the fix (real files, a real
read-only folder)."""

from __future__ import annotations

import sys

import pytest

from cuda_agent.cli.main import main
from cuda_agent.cli.writable import check_writable_folder
from cuda_agent.errors import UserError
from tests.read_only import read_only


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["cuda-agent", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return exit_info.value.code or 0, capsys.readouterr().err


def test_a_new_folder_in_a_writable_place_passes(tmp_path):
    check_writable_folder(tmp_path / "a" / "b", "--out")
    assert not (tmp_path / "a").exists()  # checked, not created
    assert list(tmp_path.iterdir()) == []  # and the probe is gone


def test_a_path_onto_or_through_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="--out .*/file: exists and is not a folder"):
        check_writable_folder(tmp_path / "file", "--out")
    with pytest.raises(UserError, match="/file is a file, not a folder"):
        check_writable_folder(tmp_path / "file" / "run", "--out")


def test_a_read_only_folder(tmp_path):
    with read_only(tmp_path / "ro") as ro:
        with pytest.raises(UserError, match=f"--out {ro}/run: cannot write there \\(in {ro}\\)"):
            check_writable_folder(ro / "run", "--out")


def test_commands_say_it_in_one_line(monkeypatch, capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    code, err = cli(monkeypatch, capsys, "workspace", "elementwise_chain", str(tmp_path / "file"))
    assert code == 2 and err.startswith("error: workspace DIR") and err.count("\n") == 1
    assert "exists and is not a folder" in err
    with read_only(tmp_path / "ro") as ro:
        code, err = cli(monkeypatch, capsys, "workspace", "elementwise_chain", str(ro / "ws"))
        assert code == 2 and "cannot write there" in err and err.count("\n") == 1
        monkeypatch.setenv("CUDA_AGENT_CACHE", str(ro / "cache"))
        args = ["bench", "--solutions", str(tmp_path), "--out", str(tmp_path / "run")]
        (tmp_path / "elementwise_chain").mkdir()
        code, err = cli(monkeypatch, capsys, *args)
        assert code == 2 and err.startswith(f"error: CUDA_AGENT_CACHE {ro}/cache: cannot write")
        assert "set CUDA_AGENT_CACHE to a writable folder" in err and err.count("\n") == 1


def test_report_into_a_read_only_run_folder(monkeypatch, capsys, tmp_path):
    from cuda_agent.bench import RunMeta, RunStore

    RunStore(tmp_path / "run").start(RunMeta(kind="solutions", tasks="builtin", solutions="s"))
    with read_only(tmp_path / "run") as run:
        code, err = cli(monkeypatch, capsys, "report", str(run))
    assert code == 2 and err.startswith(f"error: report {run}: cannot write there")
    assert "copy the run folder somewhere writable" in err and err.count("\n") == 1
