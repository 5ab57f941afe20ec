"""Which NeMo userbuffers config a published row's recipe names (costmodel/layout/ub_overlap.py recipe_config), as
wt35_review (session 35) read Megatron-Bridge's recipes at 067f987df: its MXFP8 recipes keep the TP overlap and name
the fp8 config; its GB300 recipes name the B200 shapes; NeMo 2's scripts turn the overlap off under MXFP8."""

from costmodel.layout import ub_overlap


def test_bridge_mxfp8_recipes_name_the_fp8_config():
    # perf_recipes/llama/gb200/llama3.py llama3_70b_pretrain_64gpu_gb200_fp8mx_config line 325
    assert ub_overlap.recipe_config("megatron-bridge", "llama3-70b", "gb200", "mxfp8") \
        == "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192"
    # perf_recipes/llama/b200/llama31.py llama31_405b_pretrain_128gpu_b200_fp8mx_config line 137
    assert ub_overlap.recipe_config("megatron-bridge", "llama3.1-405b", "b200", "mxfp8") \
        == "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192"


def test_bridge_gb300_recipes_name_the_b200_shapes():
    # perf_recipes/llama/gb300/llama31.py lines 96 (fp8cs) and 323 (fp8mx); gb300/llama3.py line 327
    assert ub_overlap.recipe_config("megatron-bridge", "llama3.1-405b", "gb300", "current") \
        == "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192"
    assert ub_overlap.recipe_config("megatron-bridge", "llama3.1-405b", "gb300", "mxfp8") \
        == "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192"
    assert ub_overlap.recipe_config("megatron-bridge", "llama3-70b", "gb300", None) \
        == "userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192"


def test_nemo2_scripts_name_no_config_under_mxfp8():
    # NeMo's pretrain_llama31 performance script: 'if args.fp8_recipe.lower() != "mxfp8": tp_comm_overlap_cfg = ...'
    assert ub_overlap.recipe_config("nemo-25.04", "llama3.1-405b", "gb200", "mxfp8") is None
    assert ub_overlap.recipe_config("nemo-25.04", "llama3.1-405b", "gb200", "delayed") \
        == "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192"
