"""Entry point of the `cuda-agent` command.

Each command's module is imported only when that command runs (or for help, when all are
listed): the agent's model client, the bench pipeline and the trainer's modules take seconds to
import, which a single `cuda-agent eval` should not pay."""

from __future__ import annotations

import importlib
import sys

import typer

from cuda_agent.errors import Interrupted, UserError

_HELP = "Make PyTorch programs faster with agent-written CUDA kernels; train and evaluate agents."
# command name -> (module, attribute); a Typer attribute is a command group
_COMMANDS = {
    "tasks": ("cuda_agent.cli.tasks_cmd", "tasks"),
    "optimize": ("cuda_agent.cli.optimize_cmd", "optimize"),
    "workspace": ("cuda_agent.cli.workspace_cmd", "workspace"),
    "eval": ("cuda_agent.cli.eval_cmd", "eval_solution"),
    "export": ("cuda_agent.cli.export_cmd", "export"),
    "train": ("cuda_agent.cli.train_cmd", "train"),
    "synth": ("cuda_agent.cli.synth_cmd", "synth_app"),
    "bench": ("cuda_agent.cli.bench_cmd", "bench"),
    "baselines": ("cuda_agent.cli.bench_cmd", "baselines"),
    "audit": ("cuda_agent.cli.bench_cmd", "audit"),
    "report": ("cuda_agent.cli.bench_cmd", "report"),
    "compare": ("cuda_agent.cli.compare_cmd", "compare"),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with `only` that one where it names a command."""
    app = typer.Typer(
        name="cuda-agent",
        help=_HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )

    @app.callback(help=_HELP)
    def _root() -> None:
        pass

    names = [only] if only in _COMMANDS else list(_COMMANDS)
    for name in names:
        module, attribute = _COMMANDS[name]
        command = getattr(importlib.import_module(module), attribute)
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)
    return app


def main() -> None:
    """Run the CLI; a UserError becomes one line on stderr and exit status 2, a Ctrl-C that a
    command caught one line saying how to resume and exit status 130."""
    args = sys.argv[1:]
    only = args[0] if args and not {"--help", "-h"} & {args[0]} else None
    try:
        build_app(only)()
    except UserError as err:
        typer.echo(f"error: {err}", err=True)
        sys.exit(2)
    except Interrupted as err:
        typer.echo(f"interrupted: {err}", err=True)
        sys.exit(130)
