"""What the commands share between parsing and the library: the model, the workload and the layout
the options describe, and the errors they end with.

Bad input raises InputError (one line on stderr, exit status 2); a formula that disagrees with its
measurement raises Mismatch (exit status 1). No formula lives here.
"""

from __future__ import annotations

from typing import Any

import click

from costmodel.config import ConfigError, ModelConfig, Workload
from reports.commands import require_measure_extra  # noqa: F401 (re-exported for the commands)
from reports.output import ReportInputError as InputError  # one line on stderr, exit status 2
from reports.output import dtype_on  # noqa: F401 (re-exported: --dtype on a hardware without its peak)
from reports.output import finite  # noqa: F401 (re-exported: JSON without infinities)


def hardware_and_dtype(name: str | None, dtype: str) -> tuple[Any, str]:
    """A memory-only command's --hardware (None without one) and the dtype it runs with there
    (dtype_on); an unknown or malformed hardware is one error line."""
    if name is None:
        return None, dtype
    from costmodel.config import ConfigError
    from costmodel.hardware import load_hardware

    try:
        hardware = load_hardware(name)
    except ConfigError as error:
        raise InputError(str(error)) from None
    return hardware, dtype_on(hardware, dtype)


class Mismatch(click.ClickException):
    """A formula and its measurement disagree: exit status 1."""

    exit_code = 1


def load_model(model: str | None, config: str | None) -> ModelConfig:
    """The ModelConfig named by --model or read from --config (exactly one of them). --model reads
    a path as the Python API does (costmodel.api.load_model: a name ending in .json, or a path with
    a slash that exists, file or model folder), else a preset or a Hub id."""
    from costmodel.api import load_model as load_named_or_path
    from costmodel.presets import load_config_file

    if (model is None) == (config is None):
        raise InputError("give exactly one of --model NAME or --config PATH.")
    try:
        return load_named_or_path(model) if model is not None else load_config_file(config)
    except ConfigError as error:
        raise InputError(str(error)) from None


def make_workload(cfg: ModelConfig, seq_len: int | None, inference: bool = False, holds_cache: bool = True,
                  **options: Any) -> Workload:
    """A Workload with the defaults (costmodel.api.make_workload: seq_len 2048, or the model's
    context if that is shorter); its warnings go to stderr. inference (estimate's, beside its
    training figures): the weights' format defaults to the checkpoint's
    (costmodel.checkpoint.inference_options). holds_cache False (finetune's training step): no
    warning speaks of a KV cache."""
    import warnings as python_warnings

    from costmodel.api import make_workload as workload_for
    from costmodel.checkpoint import inference_options

    try:
        with python_warnings.catch_warnings(record=True) as caught:
            python_warnings.simplefilter("always")
            chosen = inference_options(cfg, options, beside_training=True) if inference else options
        workload, warnings = workload_for(cfg, seq_len, holds_cache, **chosen)
    except ConfigError as error:
        raise InputError(str(error)) from None
    for warning in [*(str(w.message) for w in caught), *warnings]:
        click.echo(f"warning: {warning}", err=True)
    return workload


def with_mtp(cfg: ModelConfig, mtp: int | None) -> ModelConfig:
    """The model with DeepSeek-V3's multi-token prediction modules (--mtp N) while training."""
    if not mtp:
        return cfg
    try:
        return cfg.replace(mtp_layers=mtp)
    except ConfigError as error:
        raise InputError(str(error)) from None


def derived_dp(given: dict[str, Any]) -> int | None:
    """The data-parallel size the layout options give: --dp, else --gpus / (tp x pp x cp), as
    Megatron-LM derives it; None when neither is given."""
    gpus = given.get("gpus")
    if given.get("dp") is not None or gpus is None:
        return given.get("dp")
    model_ranks = (given.get("tp") or 1) * (given.get("pp") or 1) * (given.get("cp") or 1)
    if model_ranks < 1 or gpus % model_ranks:
        raise InputError(f"--gpus {gpus} is not a multiple of tp x pp x cp = {model_ranks}: give --dp too, "
                         "or GPUs that divide.")
    return gpus // model_ranks


def microbatches_for(global_batch: int, batch: int, layout_given: dict[str, Any]) -> int:
    """Micro-batches per step for a global batch: global / (micro-batch x dp), dp as the layout
    derives it (from --gpus when --dp is not given)."""
    dp = derived_dp(layout_given) or 1
    if global_batch < 1:  # 0 is a multiple of anything: "not a multiple" was no reason
        raise InputError(f"--global-batch must be at least 1, got {global_batch}.")
    if global_batch % (batch * dp):
        raise InputError(f"--global-batch {global_batch} is not a multiple of batch x dp = {batch} x {dp}.")
    return global_batch // (batch * dp)


def make_layout(cfg: ModelConfig, options: dict[str, Any], inference: bool = False) -> Any:
    """The Layout the options describe, checked against the model (as an inference layout where
    `inference`: Layout.check); None if none was given."""
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return None
    # Options that say how a layout's collectives run, not which layout: alone they describe none.
    qualifiers = {"all_reduce": "--all-reduce", "cp_rotate": "--cp-rotate",
                  "cp_kv_heads": "--cp-kv-heads", "vocab_parallel": "--replicated-vocab"}
    if set(given) <= set(qualifiers):
        named = ", ".join(qualifiers[k] for k in given)
        raise InputError(f"{named} says how a layout's collectives run; give the layout too (--tp, --dp, --cp, ...).")
    # Options a layout reads only beside another: typed without it they changed nothing.
    if given.get("cp", 1) == 1:
        named = [option for key, option in (("cp_rotate", "--cp-rotate"), ("cp_kv_heads", "--cp-kv-heads"))
                 if key in given]
        if named:
            raise InputError(f"{' and '.join(named)} says how context parallelism moves keys and values; "
                             "it needs --cp above 1.")
    if "etp" in given and given.get("ep", 1) == 1:
        raise InputError("--etp is modelled with expert parallelism only (--ep above 1, and --tp above 1 for "
                         "parallel folding); without --ep the experts run under --tp.")
    if "ep_dispatcher" in given and given.get("ep", 1) == 1:
        raise InputError(f"--ep-dispatcher {given['ep_dispatcher']} says how expert-parallel ranks exchange tokens; "
                         "it needs --ep above 1.")
    from costmodel.layout import Layout

    gpus = given.pop("gpus", None)
    if gpus is not None and "dp" not in given:  # dp = world / (tp x pp x cp), as Megatron-LM derives it
        given["dp"] = derived_dp({**given, "gpus": gpus})
    if "layout_device" in given:
        given["device"] = given.pop("layout_device")
    if "stage_layers" in given:
        try:
            given["stage_layers"] = tuple(int(x) for x in given["stage_layers"].split(","))
        except ValueError:
            raise InputError(f"--stage-layers {given['stage_layers']!r}: give integers separated by commas.") from None
    try:
        layout = Layout(**given)
        layout.check(cfg, gpus, inference=inference)
        if not inference:
            layout.check_schedule()
    except ConfigError as error:
        raise InputError(str(error)) from None
    return layout
