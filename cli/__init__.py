"""The command line: a thin click group over costmodel/, validate/ and reports/, one module per
command (their options built from costmodel/spec.py by cli/options.py).

`python cli.py` (the README's entry) and the `costmodel` console script both call main(). Errors
in the input end with one line on stderr and exit status 2; no formula lives here.
"""

from __future__ import annotations

from typing import Any

import click

from reports.commands import COMMANDS  # report, plot, claims (lazy imports inside)
from reports.serving import serve  # the serving simulator (lazy imports inside)

from . import estimate, finetune, formulas, hardware, models, plan, published, simulate, sweep, train_demo, validate


#: Command names a user types that are no command here, and the command that answers each (click's
#: own "Did you mean" sent `train` to train-demo, a toy, and knew nothing of `compare`).
ANSWERED_BY = {
    "compare": "`report --models A,B --out DIR` sets models side by side (figures and tables)",
    "train": "`simulate --train` times one training step (and with --tokens a run); `plan` searches the layouts",
    "training": "`simulate --train` times one training step (and with --tokens a run); `plan` searches the layouts",
    "fit": "`estimate --hardware GPU` (and --gpus N) says whether training and inference fit",
    "cost": "`simulate --train --tokens N --price P` or `plan --tokens N --price P` price a training run, "
            "`serve --price P` serving",
    "price": "`simulate --train --tokens N --price P` or `plan --tokens N --price P` price a training run, "
             "`serve --price P` serving",
    "lora": "`finetune --method lora` (or qlora) gives a fine-tuning step's memory",
    "qlora": "`finetune --method qlora` gives a fine-tuning step's memory",
    "inference": "`simulate` times a generation; `serve` a stream of requests",
    "gpus": "`hardware` lists the GPU presets",
    "gpu": "`hardware` lists the GPU presets",
}


class Commands(click.Group):
    """The command group; an unknown command a user is likely to type names the one that answers it."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if isinstance(name, str) and self.get_command(ctx, name) is None and name.casefold() in ANSWERED_BY:
            raise click.UsageError(f"No such command {name!r}: {ANSWERED_BY[name.casefold()]}.")
        return super().resolve_command(ctx, args)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """An analytic cost model for Transformers, proven against real PyTorch code."""


@cli.result_callback()
def size_notes(result: Any) -> Any:
    """The sizes typed with a suffix, resolved (reports/options.py's Size): printed once the command has
    succeeded, so that a refused command's error stays its only line."""
    from reports.options import SIZE_NOTES

    for note in click.get_current_context().meta.get(SIZE_NOTES, ()):
        click.echo(note, err=True)
    return result


for _command in (estimate.estimate, formulas.formulas, models.models, simulate.simulate, plan.plan,
                 published.published, hardware.hardware, validate.validate, train_demo.train_demo,
                 finetune.finetune, *COMMANDS, sweep.sweep, serve):
    cli.add_command(_command)


def any_case(group: click.Group) -> None:
    """Every choice option of every command takes its values in any case (`--dtype BF16`,
    `--scheduler Sarathi`), as model and hardware names do; click passes on the listed spelling."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            any_case(command)
        for param in command.params:
            if isinstance(param.type, click.Choice):
                param.type.case_sensitive = False


any_case(cli)


def one_line(message: str) -> str:
    """The message with every non-printable character (newlines included) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def choices_of_bare_option(error: click.UsageError, args: list[str]) -> str:
    """For a choice option typed without its value (`--fp8` alone: click's "Option '--fp8' requires an
    argument."), the values it takes, so the line says what to add; "" otherwise. (click raises it
    before the command's context exists: the command is the first of `args` the group names.)"""
    name = getattr(error, "option_name", None)
    command = next((cli.commands[a] for a in args if a in cli.commands), None)
    if not isinstance(error, click.BadOptionUsage) or command is None or name is None:
        return ""
    for param in command.params:
        if name in getattr(param, "opts", ()) and isinstance(param.type, click.Choice):
            return f" It takes one of: {', '.join(map(str, param.type.choices))}."
    return ""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; usage errors and bad input print one line and return 2."""
    import sys

    from .repeated import repeated_option

    args = sys.argv[1:] if argv is None else list(argv)
    twice = repeated_option(cli, args)
    if twice is not None:
        click.echo(f"error: {one_line(twice)}", err=True)
        return 2
    try:
        code = cli.main(args=argv, prog_name="cli.py", standalone_mode=False)
        if isinstance(code, int):  # a command that ended with ctx.exit(code): plan with nothing feasible
            return code
    except click.exceptions.NoArgsIsHelpError as error:  # pragma: no cover - click >= 8.2
        click.echo(error.ctx.get_help() if error.ctx else str(error))
        return 0
    except click.UsageError as error:
        click.echo(f"error: {one_line(error.format_message() + choices_of_bare_option(error, args))}", err=True)
        return 2
    except click.ClickException as error:
        click.echo(f"error: {one_line(error.format_message())}", err=True)
        return error.exit_code
    except click.Abort:
        click.echo("aborted.", err=True)
        return 1
    except OSError as error:  # a path that cannot be read or written, wherever it is used
        where = f"{error.filename}: " if error.filename else ""
        click.echo(f"error: {one_line(where + (error.strerror or str(error)))}.", err=True)
        return 2
    except BrokenPipeError:
        return 0
    return 0
