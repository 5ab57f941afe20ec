"""Sizes as users write them: a context of 128k positions, a prompt of 4k tokens, a run of 15T tokens.

Two rules, each the convention of the numbers it reads (docs/commands.md, "Sizes"):

- A length (a sequence, a prompt, a generation, a cache, a token budget per step) is a whole number
  or one with k or M, and k = 1,024, M = 1,048,576: the models' own configs count positions in
  powers of two (Llama 3.1's "128K context" is max_position_embeddings 131072, Llama 2's "4k" 4096,
  Mistral's "32k" 32768). 1.5k or 4e3 is refused: a length is an integer.
- A total (the tokens a run trains on) is a number or one with k, M, B (G) or T, decimal (15T =
  15,000,000,000,000: Llama 3's "over 15T tokens", Chinchilla's "1.4T" = 1.4e12), as papers count them.

The CLI's options (cli/options.py's Size type) and the serving length mixes (serving/workload.py)
read sizes through these functions; the Python API takes ints, and its length mixes ("512",
"uniform:1k:4k") strings read here.
"""

from __future__ import annotations

import math
import re

#: k and M of a length, binary as the configs' position counts are.
LENGTH_SCALES = {"": 1, "k": 1 << 10, "m": 1 << 20}
#: k, M, B (G) and T of a token total, decimal as the papers' token counts are.
TOTAL_SCALES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

#: The forms each kind takes, as an error names them.
LENGTH_FORMS = "a whole number of tokens (131072) or one with k or M (128k = 131,072, 1M = 1,048,576: k = 1,024)"
TOTAL_FORMS = "a number (2e12) or one with k, M, B (G) or T (15T)"


class SizeError(ValueError):
    """A size that cannot be read; its message names the forms that can."""


def parse_length(text: str) -> int:
    """A length: "131072", "128k" (131,072), "1M" (1,048,576); k = 1,024. Not negative; at least
    zero (the caller sets its own least value). A space before the suffix is read ("128 k"), as parse_total
    reads "15 T" (float() strips it): `--seq-len "128 k"` was refused beside `--tokens "15 T"`."""
    match = re.fullmatch(r"(\d+)\s*([kKmM]?)", str(text).strip())
    if not match:
        raise SizeError(f"{str(text)!r} is not a length: {LENGTH_FORMS}.")
    return int(match[1]) * LENGTH_SCALES[match[2].casefold()]


def parse_total(text: str) -> float:
    """A token total: "2e12", "1.4T" (1.4e12), "15T" (1.5e13), "300B", "2G", "50M", "10k"; decimal.
    Its range (positive, finite, at least one token) is cost.check_tokens'."""
    text = str(text).strip()
    scale = TOTAL_SCALES.get(text[-1:].casefold(), 1.0)
    try:
        return float(text[:-1] if scale != 1.0 else text) * scale
    except ValueError:
        raise SizeError(f"{text!r} is not a token count: {TOTAL_FORMS}.") from None


def resolved(text: str, value: float) -> str | None:
    """The note that shows what a size typed with a suffix stands for ("128k = 131,072"), or None
    where the text is already the number."""
    text = str(text).strip()
    if not text[-1:].isalpha() or not math.isfinite(value):
        return None
    return f"{text} = {value:,.0f}" if float(value).is_integer() else f"{text} = {value:,}"


def spelled_out(text: str) -> str:
    """A length mix's text with each length written as its integer ("uniform:1k:4k" ->
    "uniform:1024:4096"), as a run's setup records it; a histogram's path is left as it is."""
    kind, colon, rest = str(text).partition(":")
    text = kind.lower() + colon + rest  # the kind as the parser reads it, any case (Uniform:1K:4K)
    if text.startswith("histogram:"):
        return text
    return re.sub(r"(?<![\w.])\d+\s*[kKmM](?![\w.])", lambda match: str(parse_length(match[0])), text)
