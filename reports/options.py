"""The click options `serve` (reports/serving.py) shares with cli/'s commands (simulate, plan): one
definition each, which cli/options.py re-exports (reports cannot import cli: cli imports reports)."""

from __future__ import annotations

from typing import Any, Callable

import click

from costmodel import sizes, spec
from costmodel.spec import DECODE_CODES

#: What --decode-code decides, in every command that takes it (costmodel/decode_codes.py).
DECODE_CODE_HELP = ("the code that decodes (costmodel/decode_codes.json): the ops an eager step's host time counts, "
                    "the heads its KV cache holds and how its attention reads a quantized cache (--kv-dtype)")


def decode_code_option(lead: str, default: str | None, rule: str = "") -> Callable:
    """--decode-code: one of spec.DECODE_CODES, with DECODE_CODE_HELP after the command's `lead` (the mode
    that reads it), its default (shown), or, where the default is a rule (decode_codes.serving_code), `rule`."""
    return click.option("--decode-code", type=click.Choice(DECODE_CODES), default=default,
                        show_default=default is not None,
                        help=f"{lead}{DECODE_CODE_HELP}. {rule + ' ' if rule else ''}{DECODE_CODES.described()}.")


#: ctx.meta's key for the notes Size leaves (shared by every nested context).
SIZE_NOTES = "costmodel.size_notes"


class Size(click.ParamType):
    """A size as users write it, read by costmodel/sizes.py: a length (--seq-len 128k = 131,072, k =
    1,024, M = 1,048,576; an int of at least `least`) or a token total (--tokens 15T = 1.5e13, decimal
    k, M, B (G), T; a float whose range cost.check_tokens checks). A suffix typed is resolved in a note
    ("note: --seq-len 128k = 131,072 tokens") that the group prints on stderr once the command has
    succeeded (cli/__init__.py: a refused command still prints its one line), so the number a command
    ran is never hidden."""

    def __init__(self, total: bool = False, least: int = 1) -> None:
        self.total, self.least = total, least
        self.name = "tokens" if total else "length"  # the metavar: TOKENS or LENGTH, not INTEGER

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # a default, or the Python API
            return float(value) if self.total else value
        try:
            size = sizes.parse_total(value) if self.total else sizes.parse_length(value)
        except sizes.SizeError as error:
            self.fail(str(error), param, ctx)
        if not self.total and size < self.least:
            self.fail(f"{str(value).strip()!r} is not a length of at least {self.least}: {sizes.LENGTH_FORMS}.", param, ctx)
        note = sizes.resolved(value, size)
        if note and param is not None and ctx is not None:
            ctx.meta.setdefault(SIZE_NOTES, []).append(f"note: {param.opts[0]} {note} tokens")
        return size


TOKENS = Size(total=True)  # --tokens: a run's tokens
LENGTH = Size()  # --seq-len, --prompt, --cache-size, ...: at least 1
GEN_LENGTH = Size(least=0)  # --gen: may be 0


class Number(click.ParamType):
    """A plain number in an option's one unit, the unit never typed: `--slo-ttft 500ms`, `--price $2.5` and
    `--rate 5/s` read click's "'500ms' is not a valid float.", the unit the option wants unsaid. A value
    typed with a spelling of the unit (its prefix, its suffixes below) is one line naming the number to give
    ("'500ms' is not a number: --slo-ttft is in seconds; give --slo-ttft 0.5"); anything else names the unit
    and an example. Nothing is read for the user: the number is theirs to type."""

    name = "float"

    def __init__(self, unit: str, example: str, suffixes: dict[str, float], prefix: str = "") -> None:
        self.unit, self.example, self.suffixes, self.prefix = unit, example, suffixes, prefix

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # a default, or the Python API
            return float(value)
        text = str(value).strip()
        try:
            return float(text)
        except ValueError:
            pass
        option = param.opts[0] if param is not None else "the value"
        meant = self.meant(text)
        fix = f"give {option} {meant:g}" if meant is not None else f"a number such as {option} {self.example}"
        self.fail(f"{text!r} is not a number: {option} is in {self.unit}; {fix}.", param, ctx)

    def meant(self, text: str) -> float | None:
        """The number `text` spells in this option's unit (500ms -> 0.5 for seconds), or None."""
        lowered = text.lower().replace(" ", "")
        if self.prefix and lowered.startswith(self.prefix):
            lowered = lowered[len(self.prefix):]
        for suffix, scale in sorted({**self.suffixes, "": 1.0}.items(), key=lambda item: -len(item[0])):
            if lowered.endswith(suffix):
                try:
                    return float(lowered[: len(lowered) - len(suffix)]) * scale
                except ValueError:
                    continue
        return None


#: The ways a unit is typed that the options below read back into the number to give (never used in its place).
SECONDS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6}
AN_HOUR = {"/h": 1.0, "/hr": 1.0, "/hour": 1.0, "/gpu-hour": 1.0, "/gpu/h": 1.0}
PER_SECOND = {"/s": 1.0, "req/s": 1.0, "rps": 1.0, "qps": 1.0}
SECONDS_NUMBER = Number("seconds", "0.5", SECONDS)  # --slo-ttft, --slo-tpot
PRICE = Number("dollars per GPU-hour", "2.5", AN_HOUR, prefix="$")  # --price
RATE = Number("requests per second", "5", PER_SECOND)  # --rate


def not_replica_options(function: Callable) -> Callable:
    """serve's hidden --dp, --gpus and --ep: each refused in one line saying what a replica takes instead
    (costmodel/spec.NOT_A_REPLICA), where click's "No such option" offered --dtype, --pp, --tp or --help."""
    def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            raise click.UsageError(f"--{param.name} {value}: serve takes no --{param.name}: {spec.NOT_A_REPLICA[param.name]}.")

    for name in spec.NOT_A_REPLICA:
        function = click.option(f"--{name}", type=str, default=None, expose_value=False, hidden=True,
                                callback=refuse)(function)
    return function
