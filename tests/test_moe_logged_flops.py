"""Each Megatron MoE row's own logged model TFLOP/s against its typed tokens: a check of the typed layout.

Megatron-Core logs model TFLOP/s a GPU from the sequence and batch the run really had; the pages and cards
print it beside tokens/s a GPU. So TFLOP/s x 1e12 / (tokens/s) is Megatron's FLOPs a token, and the model's
causal count a token (costmodel.layout.timing step()["model_flops"] over global batch x the typed sequence)
must come out near it. A row typed at half its sequence, or at the wrong global batch, reads about 2x: the
Nemotron 3 Super GB200 card item did (1.991 at 4,096) until it was amended to its recipe's 8,192 (wt37_moe).
The rows that stay below 0.9 are the logged count, not a typing error: GPT-OSS 120B BF16 on the
Megatron-Bridge page (25.11-26.04.01: 2.72e10 a token at 4,096, where 26.06's MXFP8 rows of the same recipe
log 3.26e10): Megatron-Bridge's flop_utils.num_floating_point_operations counted three expert projections only
'if gated_linear_unit and activation_func == F.silu' until baa0259bd (#3947, 2026-05-28: 'GLU ... = 3
projections'), an ancestor of 63b08b397 (26.06) and not of 21d102f5e (26.04.01); GPT-OSS is a GLU with
quick_gelu (gpt_oss_bridge.py lines 61, 82), so its experts were counted at 2/3 (the model's count less a third
of its experts' is 0.79 of it); DeepSeek-V4 Flash's three rows (the calculator's own DeepSeek-V4 terms, #4128 and
#5542) were not traced. GPT-OSS's two H100 pretrain cards read 0.83-0.86 until they were amended to their
tokenizer's 32,000-token vocabulary (wt37_moe; test_published_runs_cards.py).
"""

import json
from pathlib import Path

import pytest

SOURCES = ("megatron-bridge-moe", "megatron-bridge-cards", "modelzoo-qwen3")
ROOT = Path(__file__).resolve().parent.parent


def _logged_over_counted() -> dict[str, float]:
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    data = json.loads((ROOT / "costmodel" / "published_runs.json").read_text())
    ratios = {}
    for run in data["runs"]:
        source = run["id"].split(" ")[0]
        if source not in SOURCES:
            continue
        if not (run.get("published_model_tflops_per_gpu") and run.get("published_tokens_per_s_per_gpu")):
            continue
        estimate, hardware, options = train_setup(run, data["sources"][source])
        counted = step_time(estimate, hardware, time_model="kernels", flops_convention="causal",
                            **options).step()["model_flops"] / (run["global_batch"] * run["seq_len"])
        logged = run["published_model_tflops_per_gpu"] * 1e12 / run["published_tokens_per_s_per_gpu"]
        ratios[run["id"]] = logged / counted
    return ratios


@pytest.mark.slow
def test_every_megatron_moe_rows_logged_flops_fit_its_typed_sequence():
    ratios = _logged_over_counted()
    assert len(ratios) == 103 + 32 + 5  # the page's MoE rows, the cards (Qwen3 8B, dense, among them), the model zoo's
    assert min(ratios.values()) == pytest.approx(0.733, abs=1e-3)  # DeepSeek-V4 Flash
    assert max(ratios.values()) == pytest.approx(1.080, abs=1e-3)  # Nemotron 3 Ultra, 26.08
    low = sorted(run for run, ratio in ratios.items() if ratio < 0.9)
    gpt_oss_bf16 = [run for run in ratios if run.startswith("megatron-bridge-moe ") and "gpt-oss-120b bf16" in run]
    assert len(gpt_oss_bf16) == 15 and all(0.78 < ratios[run] < 0.81 for run in gpt_oss_bf16)
    assert low == sorted(gpt_oss_bf16 + [
        "megatron-bridge-moe 26.08 deepseek-v4-flash mxfp8 128xgb200",
        "megatron-bridge-cards deepseek-v4-flash perf mxfp8 128xgb200",
        "megatron-bridge-cards deepseek-v4-flash perf mxfp8 128xgb300"])
    super_gb200 = ratios["megatron-bridge-cards nemotron-3-super perf bf16 64xgb200"]
    assert super_gb200 == pytest.approx(0.9832, abs=1e-4)  # 1.9911 as first typed, at 4,096


def test_gpt_oss_bf16_rows_logged_count_is_experts_at_two_projections():
    """26.04 GPT-OSS 120B BF16 on 64 GB200 logs 2.7168e10 FLOPs a token (its TFLOP/s over the page's 15,938
    tokens/s a GPU); the model's causal count is 3.4410e10, of which the routed experts' three
    projections are 4 x 3 x 2880 x 2880 x 2 x 3 x 36 = 2.1499e10; counted with two (flop_utils before #3947),
    3.4410e10 - 2.1499e10 / 3 = 2.7244e10, 0.3% from the logged figure."""
    import json as _json

    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    data = _json.loads((ROOT / "costmodel" / "published_runs.json").read_text())
    run = {r["id"]: r for r in data["runs"]}["megatron-bridge-moe 26.04 gpt-oss-120b bf16 64xgb200"]
    estimate, hardware, options = train_setup(run, data["sources"]["megatron-bridge-moe"])
    counted = step_time(estimate, hardware, time_model="kernels", flops_convention="causal",
                        **options).step()["model_flops"] / (run["global_batch"] * run["seq_len"])
    experts = 4 * 3 * 2880 * 2880 * 2 * 3 * 36  # top-4, three projections, 2 FLOPs a MAC, forward + backward, layers
    logged = run["published_model_tflops_per_gpu"] * 1e12 / run["published_tokens_per_s_per_gpu"]
    assert counted == pytest.approx(3.4410e10, rel=1e-4) and experts == 21_499_084_800
    assert logged == pytest.approx(2.7168e10, rel=1e-4)
    assert (counted - experts / 3) / logged == pytest.approx(1.0028, abs=1e-3)
