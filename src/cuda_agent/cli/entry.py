"""The `cuda-agent` command's entry point: for the commands that evaluate in this process, the
candidates' fork server starts before the CLI's modules import torch (see
cuda_agent.sandbox.process.fork_server); then the CLI runs."""

from __future__ import annotations

import sys

from cuda_agent.sandbox.process.fork_server import start_early

EVALUATING = ("eval", "optimize")  # the others evaluate in worker processes, or not at all


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] in EVALUATING and not {"--help", "-h"} & set(args):
        start_early()
    from cuda_agent.cli.main import main as run

    run()
