"""The published eager decoding rows beside the two ways a host-driven step can add up.

For each row of costmodel/published_runs.json that runs without CUDA graphs (torchao's A100
rows, AMD's gpt-fast blog rows on an MI210): the ops one step issues (eager_ops.step_ops, the
counts of kernel_facts.json "eager_step_ops"), the published seconds a token, the kernel model's
seconds a token of the same row with CUDA graphs (its GPU work without a host term), and what
each row would need a host to spend an op under the two rules:

- overlapped (the model's rule, kernel_time.host_bound_seconds): a step is the longer of the
  host's ops and the GPU's kernels, so an op costs published / ops where the host is the longer;
- serial: the GPU idles while the host issues and the host waits for the GPU, so an op costs
  (published - kernels) / ops.

A rule that holds gives one figure an op for rows of one host, whatever their GPU work; these
are diagnostics of the rule, never a figure the model reads (the rows are not fitted).
Run: PYTHONPATH=. python validate/eager_rows.py
"""

from __future__ import annotations

from typing import Any


def eager_rows() -> list[dict[str, Any]]:
    """Each published eager decode row: its ops a step, published and modelled seconds a token,
    and the seconds an op each rule implies (None where its ops are not counted)."""
    from costmodel.eager_ops import step_ops
    from reports.published_decode import decode_run, decode_setup
    from reports.published_runs import other_runs_data, stated

    data = other_runs_data()
    rows = []
    for run in data["runs"]:
        if run["kind"] != "decode" or run.get("cuda_graphs", True):
            continue
        source = data["sources"][run["id"].split()[0]]
        if stated(run, source, "compiled"):  # torch.compile's kernels without graphs: no eager ops a step
            continue
        cfg, hardware, settings, quantization = decode_setup(run, source)
        ops = step_ops(cfg, settings["implementation"], settings["dtype"], settings["attention"],
                       settings["kv_cache"], quantization)
        published = 1 / run["published_tokens_per_s"]
        kernels = 1 / decode_run(dict(run, cuda_graphs=True), source, "kernels")
        rows.append({"run": run["id"], "hardware": hardware.name, "ops": ops, "published_s": published,
                     "ours_s": 1 / decode_run(run, source, "kernels"), "kernels_s": kernels,
                     "dispatch_s_per_op": hardware.dispatch_s_per_op,
                     "overlapped_s_per_op": None if ops is None else published / ops,
                     "serial_s_per_op": None if ops is None else (published - kernels) / ops})
    return rows


def main() -> None:
    def us(value: float | None) -> str:
        return "-" if value is None else f"{value * 1e6:.2f}"

    print(f"{'run':36s} {'hardware':10s} {'ops':>5s} {'published ms':>12s} {'ours ms':>8s} {'kernels ms':>10s} "
          f"{'file us/op':>10s} {'overlapped us/op':>16s} {'serial us/op':>12s}")
    for r in eager_rows():
        print(f"{r['run']:36s} {r['hardware']:10s} {r['ops'] or '-':>5} {r['published_s'] * 1e3:12.2f} "
              f"{r['ours_s'] * 1e3:8.2f} {r['kernels_s'] * 1e3:10.2f} {us(r['dispatch_s_per_op']):>10s} "
              f"{us(r['overlapped_s_per_op']):>16s} {us(r['serial_s_per_op']):>12s}")


if __name__ == "__main__":
    main()
