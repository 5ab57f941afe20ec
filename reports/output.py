"""Writing report files: atomically, deterministically, with one clear error for bad paths.

Every file is written to a temporary name in its own directory and moved into place with
os.replace, so an interrupted or failed write never leaves a partial file (a symlink or a device,
/dev/stdout, is written through instead: a rename would put a file in its place). Figures carry no
timestamps (PNG "Software"/SVG "Date" metadata removed, a fixed SVG hash salt), numbers are
formatted the same way on every run, so the same command twice writes identical bytes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Sequence

import click

from costmodel.plain import finite  # noqa: F401 (JSON without infinities: costmodel owns the rule)

from costmodel.spec import KV_DTYPES, WEIGHT_DTYPES

SVG_HASH_SALT = "costmodel-reports"  # fixed ids in SVG output (matplotlib's svg.hashsalt)


class DtypeChoice(click.Choice):
    """--dtype's choices; a quantized format given there (--dtype fp8) is refused with the options
    that take it, which a new user looking for FP8 training or int4 weights cannot guess."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            if str(value).lower() in {*WEIGHT_DTYPES, *KV_DTYPES, "float8"}:
                self.fail(f"{value!r} is not one of {', '.join(map(repr, self.choices))}: --dtype is the data's "
                          "dtype; FP8 training's matmuls are --fp8, quantized weights --weight-dtype, a "
                          "quantized KV cache --kv-dtype (in the commands that have them).", param, ctx)
            raise


class ReportInputError(click.ClickException):
    """Bad input to a report command: one line on stderr, exit status 2."""

    exit_code = 2


def dtype_on(hardware: Any, dtype: str) -> str:
    """The dtype a memory-only command (estimate, finetune, report's layout figures) runs with on
    `hardware`: --dtype as given where the GPU has a peak for it; a dtype it lacks (bf16 on a V100
    or T4) is one error line when the user gave it and the hardware's default dtype (fp16 there,
    the same bytes) when it is only the option's default, as simulate, serve and plan take it."""
    from costmodel.spec import CANONICAL_DTYPE

    canonical = CANONICAL_DTYPE.get(dtype, dtype)
    if canonical in hardware.flops_per_s or hardware.name == "local":
        return dtype
    context = click.get_current_context(silent=True)
    if context is not None and context.get_parameter_source("dtype") == click.core.ParameterSource.COMMANDLINE:
        raise ReportInputError(hardware.missing_peak(canonical))
    return hardware.default_dtype


def progress(message: str) -> None:
    """A progress line on stderr (long runs say what they are doing)."""
    click.echo(message, err=True)


def check_destination(path: str | Path) -> Path:
    """The folder a file will be written to, after the checks atomic_file makes (the path is not
    a folder, its folder exists and can be written): a command calls it for every output before its work, so a bad
    second path fails before the first file is written. Returns the folder."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ReportInputError(f"{path}: is a directory; give a file name.")
    if not directory.is_dir():  # a file where the folder should be is not "no such directory"
        raise ReportInputError(f"{directory}: " + ("is a file, not a directory." if directory.exists() else
                                                   "no such directory."))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ReportInputError(f"{directory}: cannot be written (permission denied).")
    return directory


def _file_mode(path: Path) -> int:
    """The mode the written file gets: an existing file's own (replacing it keeps its permissions),
    else what open() would give a new file, 0o666 less the process's umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary stream whose bytes appear at path only when the block ends without an error: a
    temporary file beside it, then os.replace. Large outputs are written through it piece by
    piece; on any failure the temporary file is removed and path is left as it was."""
    path = Path(path)
    directory = check_destination(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        yield from _direct_file(path)
        return
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be written ({error.strerror or error}).") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise ReportInputError(f"{path}: cannot be written ({error.strerror or error}).") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _direct_file(path: Path) -> Iterator[BinaryIO]:
    """A symlink or a device (/dev/stdout, /dev/null, a FIFO) is written through, not replaced: the
    rename put a regular file in its place (as root, `sweep --csv /dev/full` replaced the device
    and exited 0; `--csv link.csv` turned the link into a file)."""
    try:
        stream = open(path, "wb")
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be written ({error.strerror or error}).") from None
    try:
        with stream:
            yield stream
    except OSError as error:
        raise ReportInputError(f"{path}: cannot be written ({error.strerror or error}).") from None


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write data to path atomically (atomic_file)."""
    with atomic_file(path) as stream:
        stream.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def json_text(data: Any) -> str:
    """The JSON a file and stdout both get (write_json, sweep --json)."""
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def write_json(path: str | Path, data: Any) -> Path:
    return write_text(path, json_text(data))


def number_text(value: Any) -> str:
    """One number as CSV text: ints exactly, floats with 15 significant digits (float64 is exact
    to about 16, so 15 round-trips the same on every machine)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, ".15g")
    return str(value)


def csv_text(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV with '\\n' line endings and numbers formatted by number_text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        writer.writerow([number_text(v) for v in row])
    return buffer.getvalue()


def ensure_directory(path: str | Path) -> Path:
    """The output directory, created if missing; a file in the way is bad input."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ReportInputError(f"{path}: exists and is not a directory.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ReportInputError(f"{path}: cannot create the directory ({error.strerror}).") from None
    return path


#: The figure files every command writes (`plot --out`, `serve --plot`), by suffix in any case: `plot` took .png
#: and .svg (any case) and `serve --plot` .png, .svg and .pdf (lower case only), so `plot --out f.pdf` and
#: `serve --plot t.PNG` were refused, each a format the other command wrote.
FIGURE_FORMATS = ("png", "svg", "pdf")
FIGURE_FILES = ", ".join(f".{fmt}" for fmt in FIGURE_FORMATS[:-1]) + f" or .{FIGURE_FORMATS[-1]}"


def figure_format(path: str, option: str) -> str:
    """The format a figure file's suffix names (png, svg or pdf, any case), else one ReportInputError."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise ReportInputError(f"{option} {path!r}: a figure file ends in {FIGURE_FILES}.")
    return fmt


def figure_bytes(figure: Any, fmt: str) -> bytes:
    """A matplotlib figure as PNG, SVG or PDF bytes with no timestamps or random ids."""
    import matplotlib

    buffer = io.BytesIO()
    metadata = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None}}.get(
        fmt, {"Date": None, "Creator": None})
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}):
        figure.savefig(buffer, format=fmt, metadata=metadata, dpi=110 if fmt == "png" else None)
    return buffer.getvalue()
