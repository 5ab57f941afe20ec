"""The click options `serve` (reports/serving.py) shares with cli/'s commands (simulate, plan): one
definition each, which cli/options.py re-exports (reports cannot import cli: cli imports reports)."""

from __future__ import annotations

from typing import Callable

import click

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
