"""Counts the aten ops one decoding step of Hugging Face generate issues under the transformers
releases the published eager rows name (kernel_facts.json "eager_step_ops", the entries
"transformers-4.31", "-4.32", "-4.34", "-4.36", "-4.39"): 4.31 (hamel-latency-2023-hf), 4.32.1
(optimum-gptq-bench: 08-09/2023, no release named; 4.32.0 is the first with the GPTQ integration it
runs), 4.34.1 (premai-a100), 4.36.2 (tinychat-b76fab6's hf rows) and 4.39.3 (premai-v2).
Each release's own modelling and generation code, counted as validate/generate_ops.py counts
5.24's (generate's steps between 3 and 7 new tokens, greedy, an EOS stated, per layer the
difference between models of two layers and one, torch 2.13 CPU), in bf16 (fp16 takes its counts)
and fp32, at 4 KV heads of 4 and at 2 of 4 (the grouped heads' repeat_kv ops a layer).

What changed between releases (the aten op names of the counts, bf16, per layer): 4.31-4.34's eager
layer (100) slices the cached cos/sin tables and gathers them by position ids (slice, squeeze, index,
unsqueeze) and runs eager attention (expand, two bmm, div, the mask's add, softmax in fp32 and its
casts); 4.36.2's sdpa layer (79) keeps the cached tables and makes one fused call; 4.39.3's Llama
sdpa layer (94) computes the rotary cos and sin in every layer (inv_freq @ position_ids as a bmm,
cat, cos, sin and their casts), and its step builds a causal mask from cache_position. 4.31-4.34 have
no sdpa path for Llama (eager only); 4.36.2's and 4.39.3's rows run sdpa, their default. 4.36.2's MPT
(MptAttention: eager only, ALiBi) and Falcon-7B's layout (FalconAttention calls F.scaled_dot_product_attention
itself, whatever attention is asked: eager and sdpa count the same) are counted too (wt46_eagerhost: the
tinychat-b76fab6 FP16 MPT and Falcon rows), from generate_ops.RELEASE_FAMILIES' tiny configs.

The release is not installed: unpack its wheel (`pip download transformers==4.39.3 --no-deps -d
DIR`, unzip), blank its dependency check (dependency_versions_check.py's require_version_core and
require_version calls: tokenizers and huggingface_hub are newer here) and put it first:
`PYTHONPATH=DIR:$PWD python -m validate.generate_ops_releases`. It prints the counts of
the release it finds as JSON (tests/test_generate_ops_releases.py checks kernel_facts.json's
integers against what was printed, kept in validate/generate_ops_releases.json)."""

from __future__ import annotations

import json
import sys
from typing import Any

#: What each release's rows run: (family, attention) pairs counted, in both dtypes.
COUNTED = {
    "4.31.0": (("llama", "eager"),),
    "4.32.1": (("llama", "eager"),),
    "4.34.1": (("llama", "eager"),),
    "4.36.2": (("llama", "sdpa"), ("mpt", "eager"), ("falcon", "sdpa")),  # mpt, falcon: wt46_eagerhost
    "4.39.3": (("llama", "sdpa"), ("mistral", "sdpa")),
}


def release_counts(version: str) -> dict[str, Any]:
    """The release's counts by "family attention dtype": per_layer (4 KV heads of 4), per_step and
    grouped_kv_per_layer (2 of 4 less 4 of 4), as kernel_facts.json states them."""
    from validate import generate_ops as g

    out: dict[str, Any] = {}
    for family, attention in COUNTED[version]:
        for dtype in ("bf16", "fp32"):
            single = g.step_ops(attention, dtype, 4, family)
            grouped = g.step_ops(attention, dtype, 2, family)
            if single["per_step"] != grouped["per_step"]:
                raise AssertionError(f"{version} {family}: grouped KV heads change the step's own ops.")
            out[f"{family} {attention} {dtype}"] = {
                "per_layer": int(single["per_layer"]), "per_step": int(single["per_step"]),
                "grouped_kv_per_layer": int(grouped["per_layer"] - single["per_layer"])}
    return out


def main(argv: list[str]) -> None:
    import transformers

    if transformers.__version__ not in COUNTED:
        print(f"error: put one of transformers {', '.join(COUNTED)} first on the path, found "
              f"{transformers.__version__}.", file=sys.stderr)
        raise SystemExit(2)
    print(json.dumps({transformers.__version__: release_counts(transformers.__version__)}))


if __name__ == "__main__":
    main(sys.argv[1:])
