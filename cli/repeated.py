"""An option typed twice: click keeps the last value of a single-valued option and drops the others
without a word (`sweep --model llama2-7b --model mistral-7b` swept Mistral alone; `serve --prefix-caching
--no-prefix-caching` ran without it). A typed option is read or refused, never dropped
(options.refuse_typed), so `main` refuses the command line in one line before click parses it.
"""

from __future__ import annotations

import click


def repeated_option(group: click.Group, args: list[str]) -> str | None:
    """The sentence refusing the first single-valued option given twice with two values in `args` (a
    flag and its --no- form are one option with two values), or None. The same value twice is
    harmless; options that take several values (multiple=True, counted flags) may repeat; everything
    after `--` is an argument."""
    command: click.Command = group
    tokens = list(args)
    while isinstance(command, click.Group):  # the sub-command (plot flops: two levels)
        names = [t for t in tokens if not t.startswith("-")]
        if not names or names[0] not in command.commands:
            return None  # click says what is wrong
        tokens = tokens[tokens.index(names[0]) + 1:]
        command = command.commands[names[0]]
    options = {name: param for param in command.params if isinstance(param, click.Option)
               for name in (*param.opts, *param.secondary_opts)}
    seen: dict[str, tuple[str, str]] = {}  # the parameter: the option as typed and its value
    index = 0
    while index < len(tokens) and tokens[index] != "--":
        token = tokens[index]
        index += 1
        name, inline = token.split("=", 1) if token.startswith("--") and "=" in token else (token, None)
        param = options.get(name)
        if param is None or param.multiple or param.count:
            continue
        value = name  # a flag's value is which of its names was typed
        if not param.is_flag:
            value = inline if inline is not None else (tokens[index] if index < len(tokens) else "")
            index += inline is None  # its value, whatever it looks like
        first = seen.setdefault(param.name, (name, value))
        if first[1] != value:
            typed = f"{first[0]} and {name}" if first[0] != name else name
            shown = "" if param.is_flag else f" ({first[1]!r}, then {value!r})"
            several = " (--models takes several, comma-separated)" if param.name == "model" and any(
                p.name == "models" for p in command.params) else ""
            return (f"{typed}: one option given two values{shown}; click would keep the last and drop the other "
                    f"without a word: give it once{several}.")
    return None
