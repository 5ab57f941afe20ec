"""Exact numbers without sympy: the cost tree's expressions compiled once to plain Python, cached.

`estimate` runs far more often than the formulas change, and importing sympy alone costs about a
second. So the first run for a model's structure (every config field except the dimension sizes)
and a workload's options builds the tree with sympy, writes every expression the caller asks for
as integer Python (common subexpressions shared; Fraction where a coefficient is a ratio;
conditions for Piecewise and max for Max), and caches that module; later runs import it and
evaluate it with the dimensions' values, without sympy. The cache file's name is a hash of
costmodel's own source and facts table and of the structure, so editing a formula or a fact
invalidates it. Values are exact: the same integers sympy's substitution gives (a test checks).
A caller may also ask for expressions in float64 over numpy arrays (evaluate_arrays, numpy_source):
decode_sums sums an MoE rerun's expert bytes, a power of the context, that way.

The cache lives in $XDG_CACHE_HOME/transformer-costmodel/compiled (~/.cache/...); where it cannot
be written, the module goes to a private temporary folder for this run only. Beside each module
its compiled code object (.code, checked against the source's hash and the interpreter's bytecode
magic number), so a warm run neither rebuilds nor recompiles it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import marshal
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

PACKAGE_DIR = Path(__file__).resolve().parent
#: The symbols a compiled function takes, in order (costmodel/symbols.py, by name).
ARGUMENTS = ("d", "h", "h_kv", "d_h", "d_ff", "V", "P", "N_tt", "N_rb", "L_enc", "L_dec",
             "d_r", "d_e", "w", "L_w", "E", "k", "d_x", "d_s", "d_l", "L_moe", "r_q", "r_kv", "d_v", "L_np",
             "h_i", "d_i", "p_l", "V_pl", "d_hg", "L_ws", "L_fs", "h_kvg", "A_u", "r_la",
             "H_m", "P_m", "N_m", "G_m", "K_m", "Q_m", "L_m", "L_a", "L_f", "H_gk", "H_gv", "P_gk", "P_gv", "L_g",
             "D_m1", "R_m1", "L_m1", "L_sc", "L_la", "L_kd", "D_rg", "L_rg", "L_rt", "L_rc", "L_ml", "L_sh", "B_sh", "r_sh", "H_c", "g_o", "r_o", "m_c", "m_h", "L_cs", "L_hc", "Z",
             "b", "n", "s", "T", "c", "e", "tp", "dp")
LAYOUT_ARGUMENTS = ("tp", "dp")

Evaluator = Callable[[dict[str, int]], dict[str, Any]]
_LOADED: dict[str, Any] = {}  # this process's modules, by name


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "transformer-costmodel" / "compiled"


@lru_cache(maxsize=1)
def source_digest() -> str:
    """A hash of everything an expression can depend on: costmodel's modules and data files."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")) + sorted(PACKAGE_DIR.rglob("*.json")):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def facts_digest() -> str:
    """A hash of the facts table in force when COSTMODEL_FACTS names another file ("" if not)."""
    other = os.environ.get("COSTMODEL_FACTS")
    return hashlib.sha256(Path(other).read_bytes()).hexdigest() if other else ""


def key_name(namespace: str, key: dict[str, Any]) -> str:
    text = json.dumps({"source": source_digest(), "facts": facts_digest(), "key": key},
                      sort_keys=True, default=str)
    return f"{namespace}_{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def cached(namespace: str, key: dict[str, Any],
           build: Callable[[], tuple[dict[str, Any], ...]]) -> tuple[Evaluator, dict[str, Any]]:
    """The compiled evaluator of the expressions `build()` returns for `key`, and the JSON-able
    constants it returns beside them. build() runs only when the cache has no module for key."""
    module = cached_module(namespace, key, build)
    return module.evaluate, module.CONSTANTS


def cached_module(namespace: str, key: dict[str, Any], build: Callable[[], tuple[dict[str, Any], ...]]) -> Any:
    """The compiled module itself: CONSTANTS, evaluate (exact) and evaluate_arrays (floats over
    numpy arrays, for the expressions in build()'s optional third dict; python_source)."""
    name = key_name(namespace, key)
    if name in _LOADED:
        return _LOADED[name]
    path = cache_dir() / f"{name}.py"
    module = _load(name, path) if path.is_file() else None
    if module is None:
        source = python_source(*build())
        if not _write(path, source):  # no cache this time: a private folder for this run
            path = Path(tempfile.mkdtemp(prefix="costmodel-")) / f"{name}.py"
            path.write_text(source)
        module = _load(name, path, quiet=False)
    _LOADED[name] = module
    return module


def _load(name: str, path: Path, quiet: bool = True) -> Any:
    """The cached module; None (quiet) for a file that does not load: it is rebuilt."""
    try:
        spec = importlib.util.spec_from_file_location(name, path, loader=_KeptCodeLoader(name, str(path)))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception:
        if not quiet:
            raise
        return None


class _KeptCodeLoader(importlib.machinery.SourceFileLoader):
    """The import system's loader for a cached module, its code object from `_code` (kept beside
    the module) instead of a fresh compile or __pycache__."""

    def get_code(self, fullname: str) -> Any:
        return _code(Path(self.path))


def _code(path: Path) -> Any:
    """The module's code object, compiled once: kept marshalled beside the module (.code), headed
    by this interpreter's bytecode magic number and the source's hash, and recompiled when either
    differs. Not left to the import system's __pycache__, which PYTHONDONTWRITEBYTECODE (set in
    many containers) turns off: compiling a layout module costs tens of milliseconds each run."""
    source = path.read_bytes()
    header = importlib.util.MAGIC_NUMBER + hashlib.sha256(source).digest()
    stored = path.with_suffix(".code")
    try:
        data = stored.read_bytes()
        if data.startswith(header):
            return marshal.loads(data[len(header):])
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, str(path), "exec", dont_inherit=True)
    _write_bytes(stored, header + marshal.dumps(code))
    return code


def _write(path: Path, source: str) -> bool:
    """Write the module atomically; False when the cache folder cannot be written."""
    return _write_bytes(path, source.encode())


def _write_bytes(path: Path, data: bytes) -> bool:
    """Write a cache file atomically; False when the cache folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, suffix=".tmp", delete=False) as out:
            out.write(data)
        os.replace(out.name, path)
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# sympy -> integer Python


def python_source(expressions: dict[str, Any], constants: dict[str, Any],
                  arrays: dict[str, Any] | None = None) -> str:
    """A module with CONSTANTS and evaluate(values) -> {name: exact value} for the expressions,
    and evaluate_arrays(values) -> {name: float64 array} for `arrays` (numpy_source)."""
    import sympy as sp

    from . import symbols as S

    names = list(expressions)
    # Subexpressions holding a layout's group size stay inline, where a quotient prints as an exact
    # division (an int when it divides): shared as 1/tp they would turn every product into a Fraction.
    replacements, reduced = sp.cse([sp.sympify(expressions[n]) for n in names],
                                   symbols=sp.numbered_symbols("_x"), optimizations=None,
                                   ignore=S.LAYOUT_SYMBOLS)
    lines = [
        '"""Generated by costmodel/compiled.py from the cost tree; do not edit (a cache)."""',
        "from fractions import Fraction",
        f"CONSTANTS = {json.dumps(constants, sort_keys=True)!r}",
        "CONSTANTS = __import__('json').loads(CONSTANTS)",
        "",
        "",
        "def _ceil(x):",
        "    return -((-x.numerator) // x.denominator) if type(x) is Fraction else x",
        "",
        "",
        "def _floor(x):",
        "    return x.numerator // x.denominator if type(x) is Fraction else x",
        "",
        "",
        "def _div(a, b):",
        "    if type(a) is int and type(b) is int and a % b == 0:",
        "        return a // b",
        "    return Fraction(a, b)",
        "",
        "",
        "def _exact(x):",
        "    if type(x) is Fraction and x.denominator == 1:",
        "        return x.numerator",
        "    return x",
        "",
        "",
        "def evaluate(values):",
        f"    {', '.join(ARGUMENTS)} = ({', '.join(_argument(a) for a in ARGUMENTS)})",
    ]
    lines += [f"    {symbol} = {to_python(expr)}" for symbol, expr in replacements]
    lines.append("    return {")
    lines += [f"        {name!r}: _exact({to_python(expr)})," for name, expr in zip(names, reduced)]
    lines.append("    }")
    return "\n".join(lines + numpy_source(arrays or {})) + "\n"


def numpy_source(expressions: dict[str, Any]) -> list[str]:
    """Lines of evaluate_arrays(values): the expressions in float64, vectorised over whatever
    values are numpy arrays, printed by sympy's NumPyPrinter. Where evaluate's exact integers
    would grow with a value (a power to a count of tokens, blocks/experts.py experts_touched: the
    exact (E - k)^T / E^T of (1 - k/E)^T has T log2(E) bits), this is O(1) per point: the
    printer keeps (1 - k/E)^T a power of a float in [0, 1], never a quotient of two that overflow."""
    import sympy as sp
    from sympy.printing.numpy import NumPyPrinter

    names = list(expressions)
    replacements, reduced = sp.cse([sp.sympify(expressions[n]) for n in names],
                                   symbols=sp.numbered_symbols("_y"), optimizations=None)
    printer = NumPyPrinter()
    lines = ["", "", "def evaluate_arrays(values):",
             "    import functools  # noqa: F401  (the printer's Min and Max)", "    import numpy",
             f"    {', '.join(ARGUMENTS)} = ({', '.join(_argument(a) for a in ARGUMENTS)})"]
    lines += [f"    {symbol} = {printer.doprint(expr)}" for symbol, expr in replacements]
    lines.append("    return {")
    lines += [f"        {name!r}: numpy.asarray({printer.doprint(expr)}, dtype=numpy.float64),"
              for name, expr in zip(names, reduced)]
    lines.append("    }")
    return lines


def _argument(name: str) -> str:
    """How the generated function reads a symbol: a layout's group sizes default to 1 (no
    layout); every other symbol must be given."""
    return f"values.get({name!r}, 1)" if name in LAYOUT_ARGUMENTS else f"values[{name!r}]"


def to_python(expr: Any) -> str:
    """Exact integer Python for a sympy expression (ints, Fraction, conditionals, max/min, mod)."""
    import sympy as sp

    if isinstance(expr, (bool, sp.logic.boolalg.BooleanAtom)):
        return "True" if bool(expr) else "False"
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Rational:
        return f"Fraction({int(expr.p)}, {int(expr.q)})"
    if expr.is_Symbol:
        return expr.name
    if expr.is_Add:
        return "(" + " + ".join(to_python(a) for a in expr.args) + ")"
    if expr.is_Mul:
        numerator, denominator = expr.as_numer_denom()
        if any(not power.exp.is_number for power in sp.sympify(denominator).atoms(sp.Pow)):
            # a power to a count of tokens below the line (blocks/experts.py experts_touched: E^T of
            # (1 - k/E)^T): one quotient over E^T would reduce two numbers of T log2(E) bits by their
            # gcd (~4 ms at T = 5,120, E = 128; 30 ms at E = 256), at every evaluation. As the
            # product of its factors, (1 - k/E)^T is a Fraction raised to T (coprime powers, never
            # reduced) and each product or sum with it takes one gcd against a small number: the
            # same exact value, each operation linear in its size.
            return "(" + " * ".join(to_python(a) for a in expr.args) + ")"
        if denominator != 1:  # exact division: an int where it divides, else a Fraction
            return f"_div({to_python(numerator)}, {to_python(denominator)})"
        return "(" + " * ".join(to_python(a) for a in expr.args) + ")"
    if expr.is_Pow and expr.exp.is_Integer:
        base, exponent = to_python(expr.base), int(expr.exp)
        return f"({base} ** {exponent})" if exponent >= 0 else f"Fraction(1, {base} ** {-exponent})"
    if expr.is_Pow and not expr.exp.is_number:
        # a power to a count of tokens (blocks/experts.py experts_touched: E^T and (E - k)^T, T >= 0;
        # cse's symbols carry no assumptions), exact: ints stay ints, a Fraction a Fraction
        return f"({to_python(expr.base)} ** {to_python(expr.exp)})"
    if isinstance(expr, sp.Piecewise):
        out = "0"
        for value, condition in reversed(expr.args):
            out = to_python(value) if condition is sp.true else (
                f"({to_python(value)} if {to_python(condition)} else {out})")
        return out
    if isinstance(expr, (sp.ceiling, sp.floor)):
        function = "_ceil" if isinstance(expr, sp.ceiling) else "_floor"
        return f"{function}({to_python(expr.args[0])})"
    if isinstance(expr, sp.Mod):  # (int4 padding where K is not a multiple: quantization.stored_shape)
        return f"({to_python(expr.args[0])} % {to_python(expr.args[1])})"
    if isinstance(expr, (sp.Max, sp.Min)):
        function = "max" if isinstance(expr, sp.Max) else "min"
        return f"{function}(" + ", ".join(to_python(a) for a in expr.args) + ")"
    relations = {sp.Eq: "==", sp.Ne: "!=", sp.StrictGreaterThan: ">", sp.GreaterThan: ">=",
                 sp.StrictLessThan: "<", sp.LessThan: "<="}
    for kind, operator in relations.items():
        if isinstance(expr, kind):
            return f"({to_python(expr.lhs)} {operator} {to_python(expr.rhs)})"
    if isinstance(expr, (sp.And, sp.Or)):
        joiner = " and " if isinstance(expr, sp.And) else " or "
        return "(" + joiner.join(to_python(a) for a in expr.args) + ")"
    if isinstance(expr, sp.Not):
        return f"(not {to_python(expr.args[0])})"
    raise NotImplementedError(f"compiled.to_python: no rule for {type(expr).__name__} ({expr})")
