"""veRL's entry points run inside the launching process: `python -m MODULE ARGS` with the
interpreter's argv and exit status, the output sent where a child's would have gone."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from cuda_agent.rl.module_run import module_of, output_to, run_module_command

ENTRY = """
import sys
from pathlib import Path

if __name__ == "__main__":
    Path(sys.argv[1]).write_text(" ".join(sys.argv[2:]))
    if sys.argv[2] == "fail":
        raise RuntimeError("the entry point failed")
    if sys.argv[2] == "exit":
        sys.exit(int(sys.argv[3]))
"""


@pytest.fixture
def entry(tmp_path, monkeypatch):
    (tmp_path / "pkg_entry").mkdir()
    (tmp_path / "pkg_entry" / "__init__.py").write_text("")
    (tmp_path / "pkg_entry" / "main.py").write_text(textwrap.dedent(ENTRY))
    monkeypatch.syspath_prepend(str(tmp_path))
    return lambda *args: [sys.executable, "-m", "pkg_entry.main", str(tmp_path / "argv"), *args]


def test_the_module_runs_as_main_with_its_arguments_and_argv_comes_back(entry, tmp_path):
    argv = list(sys.argv)
    assert run_module_command(entry("a", "b=1")) == 0
    assert (tmp_path / "argv").read_text() == "a b=1"
    assert sys.argv == argv


def test_exit_codes_and_exceptions_become_the_exit_status(entry, capsys):
    assert run_module_command(entry("exit", "3")) == 3
    assert run_module_command(entry("exit", "0")) == 0
    assert run_module_command(entry("fail")) == 1
    assert "RuntimeError: the entry point failed" in capsys.readouterr().err


def test_only_this_interpreters_module_commands_run_here():
    assert module_of([sys.executable, "-m", "verl.model_merger", "merge"]) == "verl.model_merger"
    assert module_of(["torchrun", "-m", "verl.trainer.sft_trainer"]) is None
    assert module_of([sys.executable, "-c", "pass"]) is None
    with pytest.raises(ValueError, match="not a `python -m MODULE` command"):
        run_module_command(["torchrun", "--standalone", "-m", "x"])


def test_output_goes_to_the_file_and_comes_back(tmp_path, capfd):
    log = tmp_path / "stage.log"
    with log.open("a") as out:
        out.write("$ header\n")
        with output_to(out):
            print("from python")
            os.write(2, b"from C\n")
    print("after")
    assert log.read_text() == "$ header\nfrom python\nfrom C\n"
    assert "after" in capfd.readouterr().out
