"""The `cuda-agent` command's entry point. For the commands that evaluate in this process, what
can start before the CLI's modules import torch starts here: the candidates' fork server (see
cuda_agent.sandbox.process.fork_server) and, for `eval` of a single file, the build of its
literal extension calls (cuda_agent.sandbox.single_file.early); then the CLI runs."""

from __future__ import annotations

import sys
from pathlib import Path

from cuda_agent.sandbox.process.fork_server import start_early

EVALUATING = ("eval", "optimize")  # the others evaluate in worker processes, or not at all


def main() -> None:
    args = sys.argv[1:]
    early = None
    if args and args[0] in EVALUATING and not {"--help", "-h"} & set(args):
        start_early()
        solution = _option(args, "--solution")
        if args[0] == "eval" and solution is not None:
            from cuda_agent.sandbox.config import default_cache_dir
            from cuda_agent.sandbox.single_file.early import start

            early = start(Path(solution), default_cache_dir(), _option(args, "--arch"))
    from cuda_agent.cli.main import main as run

    try:
        run()
    finally:
        if early is not None:
            early.stop()  # a build the evaluation never asked for is not left running


def _option(args: list[str], name: str) -> str | None:
    """The value given to `name` (`--name VALUE` or `--name=VALUE`), the last one given."""
    found = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith(f"{name}="):
            found = arg.split("=", 1)[1]
    return found
