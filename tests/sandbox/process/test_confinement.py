"""run_isolated and the confinement layers, on real child processes."""

import errno
import os
import signal
import socket
import time
from pathlib import Path

from cuda_agent.sandbox import IsolatedResult, run_isolated


def _probe(outside: str) -> dict:
    found = {}
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        found["inet"] = "allowed"
    except OSError as err:
        found["inet"] = err.errno
    try:
        os.kill(os.getppid(), 0)
        found["signal_parent"] = "allowed"
    except OSError as err:
        found["signal_parent"] = err.errno
    try:
        Path(outside).write_text("escaped")
        found["write_outside"] = "allowed"
    except OSError as err:
        found["write_outside"] = err.errno
    Path("inside.txt").write_text("ok")
    found["write_inside"] = Path("inside.txt").read_text()
    found["env"] = sorted(os.environ)
    return found


def _hog(mb: int) -> int:
    blocks = [bytearray(1 << 20) for _ in range(mb)]
    time.sleep(30)
    return len(blocks)


def test_value_comes_back():
    result = run_isolated(divmod, (17, 5))
    assert result.ok and result.value == (3, 2) and not result.timed_out


def test_confinement_layers(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    outside = tmp_path / "outside.txt"
    result = run_isolated(_probe, (str(outside),))
    assert result.ok, result.error
    found = result.value
    assert found["write_inside"] == "ok"
    assert "SECRET_TOKEN" not in found["env"]
    assert "HOME" in found["env"] and "TMPDIR" in found["env"] and "PATH" in found["env"]
    # Landlock and seccomp are on where the kernel has them (this machine's does).
    if os.uname().sysname == "Linux":
        assert found["inet"] != "allowed"
        assert found["signal_parent"] != "allowed"
        assert found["write_outside"] != "allowed"
        assert not outside.exists()


def test_errors_exits_and_timeouts_are_reported():
    failed = run_isolated(int, ("not a number",))
    assert not failed.ok and "ValueError" in failed.error
    exited = run_isolated(os._exit, (0,))
    assert not exited.ok and "exited with status 0 before answering" in exited.error
    slow = run_isolated(time.sleep, (30,), timeout_s=1)
    assert slow.timed_out and not slow.ok and slow.seconds < 10


def test_memory_limit_kills():
    hog = run_isolated(_hog, (3000,), memory_mb=500, timeout_s=60)
    assert not hog.ok
    assert "memory" in hog.error.lower() or "MemoryError" in hog.error


def test_child_cannot_signal_the_parent():
    attempt = run_isolated(os.kill, (os.getpid(), signal.SIGTERM))  # the pid is ours, the parent's
    assert not attempt.ok and "PermissionError" in attempt.error


def test_child_killed_by_signal():
    result = run_isolated(_suicide, (signal.SIGSEGV,))
    assert not result.ok and "killed by signal SIGSEGV" in result.error


def _suicide(sig: int) -> None:
    os.kill(os.getpid(), sig)


def test_confined_subprocess_writes_only_in_its_folder(tmp_path):
    import subprocess
    import sys

    from cuda_agent.sandbox import confine_preexec, scrubbed_env

    work, outside = tmp_path / "work", tmp_path / "outside.txt"
    work.mkdir()
    script = (
        "import pathlib, socket\n"
        "pathlib.Path('inside.txt').write_text('ok')\n"
        f"try:\n    pathlib.Path({str(outside)!r}).write_text('x')\n"
        "except OSError:\n    print('outside refused')\n"
        "try:\n    socket.socket(socket.AF_INET6)\nexcept OSError:\n    print('inet refused')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=work,
        env=scrubbed_env(work),
        preexec_fn=confine_preexec(work),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (work / "inside.txt").read_text() == "ok"
    assert "outside refused" in proc.stdout and "inet refused" in proc.stdout
    assert not outside.exists()


def test_an_isolated_error_reads_as_one_line():
    long = "RuntimeError: " + "x" * 400 + "\nTraceback line\n"
    assert IsolatedResult(False, error=long).error_line() == long.splitlines()[0][:300]
    assert IsolatedResult(False, error="\n  the child died\nmore").error_line() == "the child died"
    assert IsolatedResult(False, error="   ").error_line() == "no answer"
    assert IsolatedResult(False).error_line() == "no answer"


def _start_processes_and_threads() -> dict:
    import subprocess
    import threading

    from cuda_agent.sandbox.process.confinement import apply_confinement

    found = {"layers": apply_confinement(Path.cwd(), no_processes=True)}
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        found["fork"] = "allowed"
    except OSError as err:
        found["fork"] = err.errno
    try:
        subprocess.run(["true"], check=False)
        found["subprocess"] = "allowed"
    except OSError as err:
        found["subprocess"] = err.errno
    box = []
    thread = threading.Thread(target=box.append, args=(7,))
    thread.start()
    thread.join()
    found["thread"] = box
    return found


def test_a_candidates_confinement_starts_no_process_but_threads(tmp_path):
    # a candidate's GPU work must all run in its own process, where the GPU trace sees it
    result = run_isolated(_start_processes_and_threads, cwd=tmp_path)
    assert result.ok, result.error
    found = result.value
    if os.uname().sysname == "Linux" and found["layers"]["seccomp"]:
        assert found["fork"] == errno.EPERM and found["subprocess"] != "allowed"
    assert found["thread"] == [7]
