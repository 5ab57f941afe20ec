"""The ops of Hugging Face generate's decode step under the transformers releases the published eager rows
name (session 41, wt41_hfgen): kernel_facts.json eager_step_ops "transformers-4.31" ... "transformers-4.39",
counted by validate/generate_ops_releases.py from each release's own code (its printed output kept in
validate/generate_ops_releases.json), and the rows that now run them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from costmodel.eager_ops import step_ops
from costmodel.kernel_facts_file import kernel_facts
from costmodel.presets import load_preset

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "validate" / "generate_ops_releases.json").read_text())
A100_DISPATCH_S = 7.1e-6  # the A100 files' dispatch_s_per_op: FlagGems issue #4558, torch.add on an A100's host


def test_the_facts_are_the_counts_printed():
    """Every release entry's integers are what validate/generate_ops_releases.py printed under that release's wheel,
    per layer, per step and the grouped heads' repeat_kv ops, in bf16 and fp32."""
    entries = {(e["name"], e["family"], e["attention"]): e["ops"]
               for e in kernel_facts()["eager_step_ops"]["implementations"] if e["name"] in
               ("transformers-4.31", "transformers-4.32", "transformers-4.34", "transformers-4.36", "transformers-4.39")}
    expected = {}
    for version, counts in RECORDED.items():
        for key, count in counts.items():
            family, attention, dtype = key.split()
            name = "transformers-" + ".".join(version.split(".")[:2])
            expected.setdefault((name, family, attention), {})[dtype] = count
    assert entries == expected
    # the integers themselves (transformers' own code, torch 2.13 CPU): Llama per layer / per step in bf16
    assert RECORDED["4.31.0"]["llama eager bf16"] == {"per_layer": 100, "per_step": 47, "grouped_kv_per_layer": 8}
    assert RECORDED["4.34.1"]["llama eager bf16"] == {"per_layer": 100, "per_step": 50, "grouped_kv_per_layer": 8}
    assert RECORDED["4.36.2"]["llama sdpa bf16"] == {"per_layer": 79, "per_step": 41, "grouped_kv_per_layer": 8}
    # wt46_eagerhost: 4.36.2's MPT (eager only, ALiBi) and Falcon-7B's multi-query layout (one KV head: no repeat)
    assert RECORDED["4.36.2"]["mpt eager bf16"] == {"per_layer": 50, "per_step": 54, "grouped_kv_per_layer": 0}
    assert RECORDED["4.36.2"]["falcon sdpa bf16"] == {"per_layer": 78, "per_step": 33, "grouped_kv_per_layer": 0}
    assert RECORDED["4.39.3"]["llama sdpa bf16"] == {"per_layer": 94, "per_step": 64, "grouped_kv_per_layer": 8}
    assert RECORDED["4.39.3"]["mistral sdpa bf16"] == {"per_layer": 79, "per_step": 49, "grouped_kv_per_layer": 8}


def test_recount_under_the_release_on_the_path():
    """With a release's wheel first on the path (validate/generate_ops_releases.py's docstring), the count is
    the recorded one; skipped under the installed 5.24."""
    import transformers

    from validate.generate_ops_releases import COUNTED, release_counts

    if transformers.__version__ not in COUNTED:
        pytest.skip(f"transformers {transformers.__version__} is not one of the counted releases")
    assert release_counts(transformers.__version__) == RECORDED[transformers.__version__]


def test_step_ops_under_each_release():
    """A step's ops: the layers' count x the layers plus the step's own, fp16 taking bf16's; grouped KV heads add
    repeat_kv's 8 a layer under sdpa too before 5.24 (5.24's sdpa passes enable_gqa); a family no release entry
    counts takes 5.24's (code_bases); AutoGPTQ's exllama linears add their one extra call each."""
    llama7, llama13, mistral = load_preset("llama2-7b"), load_preset("llama2-13b"), load_preset("mistral-7b")
    # wt46_eagerhost: the tinychat-b76fab6 FP16 MPT and Falcon rows' code; Falcon-40B's new decoder is not counted
    assert step_ops(load_preset("mpt-7b"), "transformers-4.36", "fp16", "eager", "dynamic") == 50 * 32 + 54 == 1654
    assert step_ops(load_preset("falcon-7b"), "transformers-4.36", "fp16", "eager", "dynamic") == 78 * 32 + 33 == 2529
    assert step_ops(load_preset("falcon-40b"), "transformers-4.36", "fp16", "sdpa", "dynamic") is None
    assert step_ops(llama7, "transformers-4.39", "fp16", "sdpa", "dynamic") == 32 * 94 + 64 == 3072
    assert step_ops(llama7, "transformers-4.39", "fp32", "sdpa", "dynamic") == 32 * 87 + 61
    assert step_ops(mistral, "transformers-4.39", "fp16", "sdpa", "dynamic") == 32 * (79 + 8) + 49
    assert step_ops(llama7, "transformers-4.34", "fp16", "eager", "dynamic") == 32 * 100 + 50
    assert step_ops(load_preset("llama3-8b"), "transformers-4.36", "fp16", "sdpa", "dynamic") == 32 * (79 + 8) + 41
    assert step_ops(llama7, "transformers", "fp16", "sdpa", "dynamic") == 32 * 76 + 56  # 5.24's, unchanged
    qwen = load_preset("qwen2.5-7b")
    assert step_ops(qwen, "transformers-4.39", "bf16", "sdpa", "dynamic") == step_ops(qwen, "transformers", "bf16",
                                                                                       "sdpa", "dynamic")
    exllama = {"weight_dtype": "int4", "quant_layout": "gptq-exllama"}
    assert step_ops(llama13, "transformers-4.32", "fp16", "eager", "dynamic", exllama) == 40 * 100 + 47 + 40 * 7


def test_premai_v2_llama_step_exactly():
    """premai-v2's Llama 2 7B fp16 row (transformers 4.39.3 on an A100): a host-bound step of 3,072 ops at the A100
    file's 7.1 us, 21.8112 ms (5.24's 2,488 ops gave 17.6648 ms); its rate as `published` computes it."""
    import costmodel
    from reports.published_decode import decode_run
    from reports.published_runs import other_runs_data

    result = costmodel.simulate("llama2-7b", "a100-80gb", prompt=20, gen=512, dtype="fp16", attention="sdpa",
                                kv_cache="dynamic", decode_code="transformers-4.39")
    assert result.data["decode"]["host"]["ops_per_step"] == 3072
    assert result.data["decode"]["host"]["seconds_per_step"] == pytest.approx(3072 * A100_DISPATCH_S, rel=1e-12)
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "premai-v2 transformers-4.39 llama2-7b-chat fp16 a100")
    assert run["implementation"] == "transformers-4.39"
    ours = decode_run(run, data["sources"]["premai-v2"], "kernels")
    assert ours == pytest.approx(45.848005, rel=1e-6)  # tokens/s (end to end, the prefill in); published 34.2
    assert ours / run["published_tokens_per_s"] == pytest.approx(1.3406, rel=1e-4)  # 1.66x under 5.24's count
