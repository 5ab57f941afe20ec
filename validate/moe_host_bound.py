"""How much host time a Megatron-Bridge MoE training row would have to pay per MoE layer pass for
the kernel model's step to meet the published one (session 22, "why Megatron MoE training rows are
too fast in the model"; validate/FINDINGS.md).

The question: Megatron-Core's MoE layer stops the host once a forward (the all-to-all dispatcher's
DtoH copy of the token counts and its `d2h_event.synchronize()`, NVIDIA/Megatron-LM d98e8a64dd
megatron/core/transformer/moe/token_dispatcher.py lines 596 and 956-958; DeepEP's
`tokens_per_expert.sum().item()`, line 1450; HybridEP's pinned-memory wait when no
`num_permuted_tokens` budget is set, megatron/core/transformer/moe/fused_a2a.py lines 415-417), so
the host cannot run ahead of the GPU across that point and, where its launches are slower than the
GPU's kernels, its time adds to the step. This module does not model that; it prints, per row, what
the mechanism would have to cost to close each row's gap, so that cost can be set beside the one
published per-launch figure (LAUNCH_S below):

  passes       the MoE layer forward-backward passes one GPU runs a step: the model's MoE layers over
               the pipeline stages (a mean where the stages' layers differ) x the micro-batches;
  missing      (published step - the kernel model's step) / passes: what each pass would have to add;
  launches     missing / LAUNCH_S: the host launches a pass would need, at LAUNCH_S each, if every
               one of them were exposed.

    PYTHONPATH=. python validate/moe_host_bound.py            # every Megatron-Bridge MoE row
    PYTHONPATH=. python validate/moe_host_bound.py --row ID   # one row (repeatable)

Nothing here is fitted, and no figure here enters the model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from costmodel.config import ConfigError
from costmodel.layout.timing import step_time
from reports.published_runs import other_runs_data, train_setup

# One kernel launch in eager execution on a B200: Cheng et al., 'Mirage Persistent Kernel',
# arXiv:2512.22219 (2025), section 6.6: 'On B200, each launch costs 3.8 us in eager execution'
# (costmodel/hardware/b200.json's source cites the same sentence for graph_kernel_s, 0.8 us under
# CUDA graphs). The only published per-launch host cost found for these GPUs' hosts.
LAUNCH_S = 3.8e-6
SOURCE = "megatron-bridge-moe"


@dataclass(frozen=True)
class HostNeed:
    """One row's step beside the per-MoE-layer-pass host time that would close its gap."""

    run_id: str
    published_s: float      # the published step: global batch x sequence / GPUs / tokens a second a GPU
    ours_s: float           # the kernel model's step
    passes: float           # MoE layer forward-backward passes one GPU runs a step
    microbatches: int

    @property
    def ratio(self) -> float:
        """Our speed over the published one (`python cli.py published`'s kernel column)."""
        return self.published_s / self.ours_s

    @property
    def published_per_pass_s(self) -> float:
        """The published step over the passes: the most a host-bound pass could take."""
        return self.published_s / self.passes

    @property
    def missing_per_pass_s(self) -> float:
        """What each pass would have to add to the model's step to reach the published one."""
        return (self.published_s - self.ours_s) / self.passes

    @property
    def launches(self) -> float:
        """The exposed launches a pass would need at LAUNCH_S each."""
        return self.missing_per_pass_s / LAUNCH_S


def host_need(run: dict, source: dict) -> HostNeed:
    """The row's published and modelled steps and its MoE layer passes (ConfigError: not expressible)."""
    estimate, hardware, options = train_setup(run, source)
    step = step_time(estimate, hardware, time_model="kernels", **options).step()
    tokens = run["global_batch"] * run["seq_len"]
    layout = estimate.layout
    passes = estimate.cfg.n_moe_layers / layout.pp * layout.microbatches
    return HostNeed(run["id"], tokens / run["gpus"] / run["published_tokens_per_s_per_gpu"],
                    tokens / step["tokens_per_second"], passes, layout.microbatches)


def moe_rows(run_ids: list[str] | None = None) -> list[dict]:
    """The Megatron-Bridge MoE training rows of published_runs.json (those named, in their order)."""
    runs = [run for run in other_runs_data()["runs"] if run["id"].split()[0] == SOURCE]
    if not run_ids:
        return runs
    by_id = {run["id"]: run for run in runs}
    missing = [run_id for run_id in run_ids if run_id not in by_id]
    if missing:
        raise ConfigError(f"no Megatron-Bridge MoE row is named {missing[0]!r} (the ids are the first column of "
                          "`python cli.py published` that start with 'megatron-bridge-moe').")
    return [by_id[run_id] for run_id in run_ids]


def main(argv: list[str]) -> int:
    run_ids = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--row"]
    if any(arg.startswith("-") and arg != "--row" for arg in argv) or argv.count("--row") != len(run_ids):
        print("error: usage: python validate/moe_host_bound.py [--row ID ...]", file=sys.stderr)
        return 2
    try:
        runs = moe_rows(run_ids)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    source = other_runs_data()["sources"][SOURCE]
    print("row | ours/published | published step s | ours s | MoE passes | published ms/pass | "
          f"missing ms/pass | launches at {LAUNCH_S * 1e6:.1f} us")
    for run in runs:
        try:
            need = host_need(run, source)
        except ConfigError as error:
            print(f"{run['id']} | not expressible: {str(error).splitlines()[0][:80]}")
            continue
        print(f"{need.run_id} | {need.ratio:.2f} | {need.published_s:.3f} | {need.ours_s:.3f} | {need.passes:g} | "
              f"{need.published_per_pass_s * 1e3:.2f} | {need.missing_per_pass_s * 1e3:.2f} | {need.launches:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
