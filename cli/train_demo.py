"""`train-demo`: train seed-toy on string reversal and plot its loss (validate/train.py)."""

from __future__ import annotations

import json

import click

from .inputs import InputError, require_measure_extra
from .options import json_option


@click.command("train-demo")
@click.option("--steps", type=int, default=2000, show_default=True, help="Training steps.")
@click.option("--batch", "-b", type=int, default=128, show_default=True, help="Strings per step.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (training and held-out strings).")
@click.option("--out", "out_png", default="out/train_loss.png", show_default=True, help="Where the loss curve (PNG) goes.")
@click.option("--eval-strings", type=int, default=1000, show_default=True, help="Held-out strings for exact match.")
@json_option("The result as JSON on stdout.")
def train_demo(steps, batch, seed, out_png, eval_strings, as_json) -> None:
    """Train seed-toy on the string-reversal task of the original Transformer's teaching articles; report exact match and plot the loss."""
    for name, value in (("--steps", steps), ("--batch", batch), ("--eval-strings", eval_strings)):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}.")
    from pathlib import Path

    require_measure_extra("train-demo")
    out = Path(out_png)
    if out.suffix.lower() != ".png":
        raise InputError(f"--out must name a .png file, got {out_png!r}.")
    if out.parent.exists() and not out.parent.is_dir():
        raise InputError(f"--out: {out.parent} is not a folder.")
    from validate.train import run_train_demo

    every = max(steps // 20, 1)

    def progress(step: int, loss: float) -> None:
        if step % every == 0 or step == steps:
            click.echo(f"step {step:>5}/{steps}  loss {loss:.4f}", err=True)

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        result = run_train_demo(steps=steps, batch=batch, seed=seed, out_png=out,
                                progress=progress, eval_strings=eval_strings)
    except OSError as error:
        raise InputError(f"--out {out_png}: {error.strerror or error}.") from None
    if as_json:
        click.echo(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in result.items()}, indent=2))
        return
    click.echo(
        f"seed-toy on string reversal: {result['steps']} steps of batch {result['batch']} in "
        f"{result['seconds']:.0f} s; loss {result['first_loss']:.3f} -> {result['final_loss']:.2e}; "
        f"exact match {100 * result['exact_match']:.1f}% on {result['eval_strings']} held-out strings "
        f"(the articles report 99.5% after 2,000 steps); loss curve: {result['png']}"
    )
