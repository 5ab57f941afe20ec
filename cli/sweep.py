"""`sweep`: every quantity of a model on an (n, b) grid, evaluated in one vectorised call.

The grid is costmodel.grid's, its axes and files reports/sweep.py's. The model and the inference
weights' format are read as `estimate` reads them (cli/inputs.py, cli/options.py): --weight-dtype
defaults to the checkpoint's quantization_config, and only the inference columns read it; --kv-dtype
(the option estimate and simulate share, cli/options.py) sets the KV cache's bytes.
"""

from __future__ import annotations

import sys

import click

from costmodel.spec import (ATTENTIONS, DEFAULT_ATTENTION, DEFAULT_DTYPE, DEFAULT_IMPL, DEFAULT_OPTIMIZER,
                            DEFAULT_RECOMPUTE, IMPLEMENTATIONS, OPTIMIZERS, RECOMPUTES)

from .inputs import load_model, make_workload
from .options import (GEN_LENGTH, choice_option, dtype_option, json_option, kv_dtype_option, model_options,
                      weight_bits_option, weight_dtype_option, weight_group_option)


@click.command()
@model_options
@click.option("--seq-len", "-n", "seq_len", default="128:131072:x2", show_default=True,
              help="Sequence lengths: a,b,c or start:stop[:+step | :xfactor] (mixable with commas); each a length as "
              "users write them (4k:128k:x2; k = 1,024).")
@click.option("--batch", "-b", "batch", default="1", show_default=True,
              help="Batch sizes, same syntax as --seq-len.")
@dtype_option(DEFAULT_DTYPE, "Activation and weight dtype.")
@choice_option("--impl", IMPLEMENTATIONS, "Whose code the activation memory models (costmodel/defaults.py).",
               DEFAULT_IMPL)
@choice_option("--attention", ATTENTIONS, "Attention kernel (fused kernels keep no n x n matrix).", DEFAULT_ATTENTION)
@choice_option("--recompute", RECOMPUTES, "Activation recomputation.", DEFAULT_RECOMPUTE)
@click.option("--gen-tokens", "--gen", "-T", "gen_tokens", type=GEN_LENGTH, default=0, show_default=True,
              help="Tokens generated after the prefill (KV cache); --gen is simulate's and plan's name.")
@choice_option("--optimizer", OPTIMIZERS, "Optimizer (state bytes).", DEFAULT_OPTIMIZER)
@weight_dtype_option
@weight_group_option
@weight_bits_option
@kv_dtype_option
@click.option("--csv", "csv_path", type=str, default=None, help="Write the grid as CSV here.")
@click.option("--json-out", "json_path", type=str, default=None, help="Write the grid as JSON here.")
@click.option("--npz", "npz_path", type=str, default=None,
              help="Write the grid as columns (numpy .npz: float64 as evaluated) here.")
@json_option("The grid as JSON on stdout (what --json-out writes), instead of the CSV.")
def sweep(model, config, seq_len, batch, csv_path, json_path, npz_path, as_json, **options) -> None:
    """Every quantity of a model on an (n, b) grid, evaluated in one vectorised call.

    Columns: FLOPs (forward, backward, training, other ops, attention, projections and FFN, the
    attention share) and bytes (activations, KV cache, weights, training and inference totals).
    The inference bytes are estimate's inference_total, a plain forward's (the logits of every
    position), not its generation row (generate's last position, what simulate sizes). They hold the weights in --weight-dtype (the checkpoint's format by default,
    as estimate's), and the KV cache in --kv-dtype (fp8 or int8: one byte per element and two fp32
    scales per layer; the model's dtype by default); weights and training bytes are unquantized. Without --csv, --json-out,
    --npz or --json the CSV goes to stdout (--json: the JSON). Values are float64 (exact below 2**53). The CSV is written as
    it is formatted, in pieces; --npz is the fast form of a big grid.
    """
    from costmodel.checkpoint import weights_note
    from reports import output
    from reports import sweep as grid
    from reports.text import plural

    for path in (csv_path, npz_path, json_path):  # every destination before the work: none half-written
        if path:
            output.check_destination(path)
    cfg = load_model(model, config)
    seq_lens = grid.parse_values(seq_len, "--seq-len", lengths=True)
    batches = grid.parse_values(batch, "--batch")
    # at the longest n: an error where the model cannot run it, else its warnings (on stderr)
    workload = make_workload(cfg, seq_lens[-1], inference=True, **options)
    note = weights_note(workload.weight_dtype, workload.weight_dtype_source)
    if note:
        click.echo(f"note: inference {note}", err=True)
    result = grid.run(cfg, workload, seq_lens, batches)
    click.echo(f"{plural(result.points, 'point')} ({plural(len(seq_lens), 'length')} x "
               f"{plural(len(batches), 'batch size')}) evaluated in {result.evaluate_seconds:.3f} s "
               f"(lambdify {result.compile_seconds:.3f} s)", err=True)
    if csv_path:
        grid.write_csv(result, csv_path)
    if npz_path:
        grid.write_npz(result, npz_path)
    if json_path:
        output.write_json(json_path, grid.json_data(result))
    if as_json:
        click.echo(output.json_text(grid.json_data(result)), nl=False)
    elif not (csv_path or json_path or npz_path):
        sys.stdout.flush()
        stdout = sys.stdout.buffer
        for chunk in grid.csv_chunks(result):
            stdout.write(chunk)
        stdout.flush()
