"""The Python API's doors. In: a notebook's numpy scalars, np.int64(4096) (an array's element, a
loop over np.arange), reach estimate, simulate, plan and serve as the Python int they stand for, and
a choice keyword in any case (dtype="BF16", scheduler="VLLM") as its list spells it, as the commands
take it (spec.spelled_choices).
Out: finite() makes a result JSON's own (no infinity), for `--json` and `.to_dict()` alike.

Without it the checks refused it in words that contradict themselves ("seq_len must be an integer,
got np.int64(1024)"), or let it through to an output json.dumps cannot write (serve's setup held
block_size np.int64(32)). The rule lives here once; `plain_arguments` wraps each public function.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .plain_values import finite, plain  # noqa: F401 (the doors' values: re-exported)


def plain_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    """function, called with plain() of each argument and each choice keyword as its list spells it; a keyword
    the function does not take is one ConfigError naming the likely one and its keywords (unknown_keyword),
    where Python raised TypeError. A function taking **options checks them itself (estimate's workload
    fields: api.check_workload_keywords; serve's replica keywords: serving/api.check_replica_keywords)."""
    import inspect

    from .spec import spelled_choices

    parameters = inspect.signature(function).parameters.values()
    known = None if any(p.kind is p.VAR_KEYWORD for p in parameters) else \
        [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    signature = inspect.signature(function)
    order = ", ".join(p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs = command_aliases(function.__name__, kwargs)
        if known is not None:
            unknown_keyword(function.__name__, kwargs, known)
        try:  # plan("llama3-70b", "h100", gpus=32): Python's TypeError "got multiple values for argument 'gpus'"
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            from .errors import ConfigError

            raise ConfigError(f"{function.__name__}: {error} (its arguments in order: {order}; "
                              "the others by keyword).") from None
        check_lengths(function.__name__, {**bound.arguments, **bound.arguments.get("workload", {})})
        return function(*(plain(arg) for arg in args),
                        **spelled_choices({key: plain(value) for key, value in kwargs.items()}, f"{function.__name__}: "))

    return call


#: The keywords that count tokens (ints in Python; the command line's --seq-len, --prompt, ... read 128k).
LENGTH_KEYWORDS = ("seq_len", "tgt_len", "prompt", "gen", "gen_tokens", "cache_size")
#: Those a function reads text of its own in: serve's prompt (and output) are length mixes ("uniform:1k:4k"); sweep's
#: seq_len is an axis whose text form (128:4096:x2) its own line turns into Python's list.
OWN_TEXT = {"serve": ("prompt",), "sweep": ("seq_len",)}


def check_lengths(owner: str, arguments: dict[str, Any]) -> None:
    """A length given as the command line's text is one ConfigError saying the number it stands for:
    simulate(..., prompt="4k") read "workload: seq_len must be an integer, got '4k'" (a keyword not typed), and
    simulate(..., gen="1k") raised Python's TypeError "'<' not supported between instances of 'str' and 'int'"."""
    from .errors import ConfigError
    from .sizes import SizeError, parse_length

    for name in LENGTH_KEYWORDS:
        value = arguments.get(name)
        if not isinstance(value, str) or name in OWN_TEXT.get(owner, ()):
            continue
        try:
            meant = f"{name}={parse_length(value)}"
        except SizeError:
            meant = "the number"
        raise ConfigError(f"{owner}: {name}: a number of tokens, got the text {value!r}: the command line reads "
                          f"spellings such as 4k (4,096); in Python give {meant}.")


#: The command line's other names of a keyword, as each command's options spell them (`serve --gen` is its
#: --output, `simulate --output` and `plan --output` their --gen): serve(..., gen=64) was "unknown keyword 'gen'".
COMMAND_ALIASES = {"serve": {"gen": "output", "gen_tokens": "output"},
                   "simulate": {"output": "gen", "gen_tokens": "gen"},
                   "plan": {"output": "gen", "gen_tokens": "gen"}}


def command_aliases(owner: str, keywords: dict[str, Any]) -> dict[str, Any]:
    """keywords with the command line's other names of one (COMMAND_ALIASES) as the function's own; both given is
    one ConfigError."""
    from .errors import ConfigError

    renamed = dict(keywords)
    for alias, name in COMMAND_ALIASES.get(owner, {}).items():
        if alias in renamed:
            if name in renamed:
                raise ConfigError(f"{owner}: {alias} and {name} are one keyword (the command's --{alias.replace('_', '-')} "
                                  f"is its --{name.replace('_', '-')}); give {name} once.")
            renamed[name] = renamed.pop(alias)
    return renamed


def unknown_keyword(owner: str, keywords: dict[str, Any], known: list[str]) -> None:
    """One ConfigError for the first of `keywords` not in `known`: simulate(..., mla="naive") raised Python's
    TypeError ("simulate() got an unexpected keyword argument")."""
    import difflib

    from .errors import ConfigError

    for name in keywords:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = layout_hint(name, keywords) if "layout" in known else ""
            raise ConfigError(f"{owner}: unknown keyword {name!r}{f' (did you mean {near[0]}?)' if near and not hint else ''}"
                              f"{hint}; it takes {', '.join(known)}.")


def layout_hint(name: str, keywords: dict[str, Any]) -> str:
    """Where a layout's field given as a keyword goes: simulate(..., gpus=8, dp=8, zero=1), as `simulate --gpus 8
    --dp 8 --zero 1` reads, said "unknown keyword 'gpus'" and the keywords, nothing on layout={...}."""
    import dataclasses

    from .layout import Layout

    fields = [field.name for field in dataclasses.fields(Layout)]
    if name != "gpus" and name not in fields:
        return ""
    given = {key: value for key, value in keywords.items() if key in fields}
    example = ", ".join(f"{key!r}: {value!r}" for key, value in given.items()) or "'dp': 8"
    what = "the GPUs are a layout's tp x pp x dp" if name == "gpus" else f"--{name.replace('_', '-')} is a layout's field"
    return f" ({what}: layout={{{example}}})"
