"""Entry point of the `cuda-agent` command."""

from __future__ import annotations

import sys

import typer

from cuda_agent.cli.bench_cmd import COMMANDS as BENCH_COMMANDS
from cuda_agent.cli.compare_cmd import compare
from cuda_agent.cli.eval_cmd import eval_solution
from cuda_agent.cli.export_cmd import export
from cuda_agent.cli.optimize_cmd import optimize
from cuda_agent.cli.synth_cmd import synth_app
from cuda_agent.cli.tasks_cmd import tasks
from cuda_agent.cli.train_cmd import train
from cuda_agent.cli.workspace_cmd import workspace
from cuda_agent.errors import Interrupted, UserError

app = typer.Typer(
    name="cuda-agent",
    help="Make PyTorch programs faster with agent-written CUDA kernels; train and evaluate agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Make PyTorch programs faster with agent-written CUDA kernels; train and evaluate agents."""


app.command()(tasks)
app.command()(optimize)
app.command()(workspace)
app.command("eval")(eval_solution)
app.command()(export)
app.command()(train)
app.add_typer(synth_app, name="synth")
for _command in BENCH_COMMANDS:  # bench, baselines, audit, report
    app.command()(_command)
app.command()(compare)


def main() -> None:
    """Run the CLI; a UserError becomes one line on stderr and exit status 2, a Ctrl-C that a
    command caught one line saying how to resume and exit status 130."""
    try:
        app()
    except UserError as err:
        typer.echo(f"error: {err}", err=True)
        sys.exit(2)
    except Interrupted as err:
        typer.echo(f"interrupted: {err}", err=True)
        sys.exit(130)
