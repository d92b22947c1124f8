"""The stages whose work is agent episodes rather than veRL: `sample` (the policy served and
played) and `teach` (stored solutions replayed), both writing trajectories under the run
folder, resumable."""

from __future__ import annotations

import shlex
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import typer

from cuda_agent.errors import UserError
from cuda_agent.rl import (
    TrainInputs,
    check_engine,
    check_gpu,
    load_sample_config,
    plan_episodes,
    sample_dir,
    sample_episodes,
    scripted_model_for,
    server_command,
    teach_dir,
    teaching_episodes,
)
from cuda_agent.task import load_tasks

SERVER_START_S = 1800.0  # loading a large checkpoint onto 8 GPUs can take many minutes


def run_sample(inputs: TrainInputs, base_url: str | None, dry_run: bool) -> None:
    cfg = load_sample_config(inputs.config)
    server = cfg.server.model_copy(update={"model": inputs.model or cfg.server.model})
    if base_url is not None:
        host_port = base_url.split("//", 1)[-1].split("/", 1)[0]
        host, _, port = host_port.partition(":")
        server = server.model_copy(update={"host": host, "port": int(port or 80)})
    cfg = cfg.model_copy(update={"server": server})
    out = sample_dir(inputs)
    episodes = plan_episodes(load_tasks(inputs.tasks), cfg.sampling.samples_per_task, out)
    typer.echo(f"stage sample: {_planned(episodes)} -> {out}")
    launch = base_url is None
    if launch:
        typer.echo("\n" + shlex.join(server_command(server)) + "\n")
    if dry_run:
        return
    if launch:
        check_engine(server)
        check_gpu("sample (serving the policy)")
    process = _start_server(server, out) if launch else None
    try:
        _wait_ready(server.base_url, process, out)
        run = sample_episodes(episodes, cfg, out, on_done=_progress)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    _summary("sampled", run)


def run_teach(inputs: TrainInputs, dry_run: bool) -> None:
    if inputs.solutions is None:
        raise UserError("missing --solutions: a folder of stored solutions, one per task name")
    cfg = load_sample_config(inputs.config)
    out = teach_dir(inputs)
    episodes = teaching_episodes(load_tasks(inputs.tasks), inputs.solutions, out)
    typer.echo(f"stage teach: {_planned(episodes)} from {inputs.solutions} -> {out}")
    if dry_run:
        return
    run = sample_episodes(
        episodes, cfg, out, on_done=_progress, model_for=scripted_model_for(inputs.solutions)
    )
    _summary("taught", run)


def _planned(episodes) -> str:
    states = [e.state for e in episodes]
    done, partial, new = (states.count(s) for s in ("done", "partial", "new"))
    return f"{len(episodes)} episodes ({done} done, {partial} to resume, {new} new)"


def _summary(verb: str, run) -> None:
    rewards = [line["reward"] for line in run.finished]
    positive = sum(r > 0 for r in rewards)
    done = f"{run.skipped} were done"
    typer.echo(f"{verb} {len(rewards)} episodes ({positive} with positive reward); {done}")


def _start_server(server, out: Path) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "server.log").open("ab")
    return subprocess.Popen(server_command(server), stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(base_url: str, process: subprocess.Popen | None, out: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise UserError(
                f"the policy server exited ({process.returncode}); see {out / 'server.log'}"
            )
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(2)
    raise UserError(f"{base_url}: no answer after {SERVER_START_S:.0f} s; see {out / 'server.log'}")


def _progress(line: dict) -> None:
    episode = f"{line['task']} #{line['sample']}"
    typer.echo(f"{episode}: {line['reason']}, {line['turns']} turns, reward {line['reward']}")
