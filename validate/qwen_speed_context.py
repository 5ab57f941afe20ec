"""What the Qwen speed benchmarks' long-context rows cost per cached key, beside what the code they
name moves per key (qwen2.5-speed-hf: transformers 4.46.0 + flash-attn 2.5.8 on an A100 80GB;
qwen3-speed-hf: transformers 4.51.3 + flash-attn 2.7.4 on an H20). Session 37 (wt37_qwenspeed).

Per model, from the published rows at 14,336 and 30,720 input tokens (each source's own metric:
Qwen2.5 divides the 2,048 generated tokens by generate()'s time, Qwen3 the prompt's and the
generated tokens): the extra seconds of the longer run spread over its 2,048 steps, per layer and
per extra cached key (16,384 keys; the longer prefill is inside it, so this is an upper bound),
and the bandwidth that cost implies for two byte counts a key and layer, d_h heads' bf16 rows:
  - the release's own path: DynamicCache's torch.cat reads and writes K and V (4 h_kv), and the
    flash kernel reads them (2 h_kv); 4.46.0's Qwen2FlashAttention2 adds repeat_kv (reads 2 h_kv,
    writes 2 h) and its kernel then reads 2 h, not 2 h_kv;
  - the repeat_kv path (6 h_kv + 4 h), which 4.51.3's flash_attention_forward does not take.
And flash-attn's split-KV count at one query (csrc/flash_attn/flash_api.cpp, v2.7.4.post1 lines
263-297 num_splits_heuristic and 299-317 set_params_splitkv, the same at v2.5.8 lines 235-286):
under 4.51.3 mha_fwd swaps the query's head groups into its rows (line 404, seqlenq_ngroups_swapped:
seqlen_q 1, no window, as transformers 4.51.3 passes none for Qwen3: modeling_qwen3.py lines 197-203),
so h_kv CTAs a split; under 4.46.0 repeat_kv leaves h == h_kv, so h CTAs a split.

    PYTHONPATH=. python validate/qwen_speed_context.py

Nothing here feeds the model: it reads published rows and states what they imply.
"""

from __future__ import annotations

import math

from reports.published_decode import decode_run, decode_setup
from reports.published_runs import other_runs_data

BF16_BYTES = 2
SHORT, LONG = 14336, 30720
GEN = 2048


def num_splits(ctas: int, sm_count: int, n_blocks: int, max_splits: int = 128) -> int:
    """flash-attn v2.7.4.post1 num_splits_heuristic with set_params_splitkv's num_sm * 2."""
    slots = 2 * sm_count
    if ctas >= 0.8 * slots:
        return 1
    max_splits = min(max_splits, slots, n_blocks)

    def eligible(s: int) -> bool:
        return s == 1 or math.ceil(n_blocks / s) != math.ceil(n_blocks / (s - 1))

    efficiency = {}
    for s in range(1, max_splits + 1):
        if eligible(s):
            waves = ctas * s / slots
            efficiency[s] = waves / math.ceil(waves)
    best = max(efficiency.values())
    return next((s for s, e in efficiency.items() if e >= 0.85 * best), 1)


def run_seconds(run: dict, source_id: str, rate: float | None = None) -> float:
    """generate()'s seconds from the published rate (or `rate`, the model's), by the source's own metric."""
    tokens = GEN + (run["prompt"] if source_id == "qwen3-speed-hf" else 0)
    return tokens / (rate or run["published_tokens_per_s"])


def key_costs() -> list[dict]:
    """One dict per dense model of both sources: ns per extra key and layer, bytes, splits."""
    data = other_runs_data()
    rows = {}
    for run in data["runs"]:
        source_id = run["id"].split()[0]
        if source_id in ("qwen2.5-speed-hf", "qwen3-speed-hf") and run["prompt"] in (SHORT, LONG):
            rows.setdefault((source_id, run["model"]), {})[run["prompt"]] = run
    out = []
    for (source_id, model), pair in rows.items():
        cfg, hardware, _, _ = decode_setup(pair[LONG], data["sources"][source_id])
        if cfg.n_moe_layers:
            continue  # Qwen3-30B-A3B: its expert loop dominates (its own entry)
        h, h_kv, d_h, layers = cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.n_decoder_layers
        extra = (run_seconds(pair[LONG], source_id) - run_seconds(pair[SHORT], source_id)) / GEN
        ns = extra / (layers * (LONG - SHORT)) * 1e9
        source = data["sources"][source_id]
        ours = [run_seconds(pair[p], source_id, decode_run(pair[p], source, "kernels")) for p in (LONG, SHORT)]
        ours_ns = (ours[0] - ours[1]) / GEN / (layers * (LONG - SHORT)) * 1e9
        row_bytes = d_h * BF16_BYTES
        repeat_kv = (6 * h_kv + 4 * h) * row_bytes
        own = repeat_kv if source_id == "qwen2.5-speed-hf" else 6 * h_kv * row_bytes
        heads = h if source_id == "qwen2.5-speed-hf" else h_kv
        blocks = math.ceil((LONG + GEN // 2) / 128)  # block_n 128 at d_h 128
        out.append({"source": source_id, "model": model, "h": h, "h_kv": h_kv, "layers": layers,
                    "ns_per_key_layer": ns, "ours_ns_per_key_layer": ours_ns, "own_bytes": own, "own_tb_s": own / ns / 1e3,
                    "repeat_kv_bytes": repeat_kv, "repeat_kv_tb_s": repeat_kv / ns / 1e3,
                    "splits": num_splits(heads, hardware.sm_count, blocks),
                    "hbm_tb_s": hardware.bandwidth_bytes_per_s / 1e12})
    return out


def main() -> None:
    print("source model h/h_kv L: ns a key and layer (14,336 -> 30,720), published and the kernel model's; own path bytes -> TB/s; "
          "repeat_kv path bytes -> TB/s; flash splits at 31,744 keys; HBM TB/s")
    for r in key_costs():
        print(f"{r['source']} {r['model']} {r['h']}/{r['h_kv']} L{r['layers']}: {r['ns_per_key_layer']:.1f} ns (ours {r['ours_ns_per_key_layer']:.1f}); "
              f"{r['own_bytes']} B -> {r['own_tb_s']:.2f}; {r['repeat_kv_bytes']} B -> {r['repeat_kv_tb_s']:.2f}; "
              f"splits {r['splits']}; HBM {r['hbm_tb_s']:.2f}")


if __name__ == "__main__":
    main()
