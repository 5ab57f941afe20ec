"""Published parameter counts the tests compare with: one table, cited once."""

# sum(p.numel() for p in model.parameters()) of Hugging Face's classes built from each model's
# config.json on the Hub (LlamaForCausalLM, MistralForCausalLM, GPT2LMHeadModel with tied
# embeddings, BertModel with its pooler, T5ForConditionalGeneration), and of the seeds'
# Transformer (704 + 704 + 715 + 2 * 49,728 + 2 * 66,240 = 234,059).
PUBLISHED = {
    "llama2-7b": 6_738_415_616,
    "llama2-13b": 13_015_864_320,
    "llama2-70b": 68_976_648_192,
    "mistral-7b": 7_241_732_096,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "bert-base-uncased": 109_482_240,
    "t5-small": 60_506_624,
    "t5-base": 222_903_552,
    "seed-toy": 234_059,
    # Vaswani et al. base / big with one shared 37,000-token table tied to the output (the paper
    # rounds to 65M / 213M): V d + 6 (4 d^2 + 2 d d_ff + d_ff + d + 2*2d) + 6 (8 d^2 + 2 d d_ff
    # + d_ff + d + 3*2d). base: 18,944,000 + 6 * 3,150,336 + 6 * 4,199,936.
    "transformer-base": 63_045_632,
    # big: 37,888,000 + 6 * 12,596,224 + 6 * 16,790,528.
    "transformer-big": 214_171_648,
}

# Issue 14's flagships: the same count of Hugging Face's class (LlamaForCausalLM, Qwen2/Qwen3,
# Gemma2, Phi3, GPTNeoX, Falcon, OPT, Bloom, Mixtral, DeepseekV3 *ForCausalLM) built from the
# config.json in costmodel/presets/ (the model's config.json on the Hub), under FakeTensorMode
# (tests/test_presets_issue14.py). Kept apart from PUBLISHED, whose models the reference model
# (validate/reference.py) also builds.
FLAGSHIPS = {
    "llama3-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-72b": 72_706_203_648,
    "qwen3-8b": 8_190_735_360,
    "gemma2-9b": 9_241_705_984,
    "gemma2-27b": 27_227_128_320,
    "phi3-mini": 3_821_079_552,
    "pythia-1.4b": 1_414_647_808,
    "falcon-7b": 6_921_720_704,
    "opt-1.3b": 1_315_758_080,
    "bloom-560m": 559_214_592,
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_620_634_112,
    "deepseek-v3": 671_026_404_352,
    # Sarathi-Serve's Table 2 model, 01-ai/Yi-34B-200K: the preset holds the values of its
    # config.json on the Hub (huggingface.co/01-ai/Yi-34B-200K/blob/837927e/config.json, written for
    # the remote-code YiForCausalLM, model_type "Yi"; 01-ai later re-published it as
    # LlamaForCausalLM, the class the leaderboard entry in CARDS names). Llama with GQA (56 query,
    # 8 KV heads): 2 x 64,000 x 7,168 (embedding, head) + 60 x 557,856,768 + 7,168 (final norm).
    "yi-34b-200k": 34_388_917_248,
    # OpenAI's gpt-oss (GptOssForCausalLM): the presets hold the values of each model's
    # config.json on the Hub (huggingface.co/openai/gpt-oss-20b and openai/gpt-oss-120b,
    # blob/main/config.json: the 120b's as a public test transcribes it with its URL, found with
    # find_string '"initial_context_length": 4096,'; the 20b's as the mirror EchoCog/gpt-oss-20b
    # config.json at 52971a1 holds it), less quantization_config (mxfp4 on the experts, which
    # from_config does not build): 24 / 36 layers of 2880, 64 query and 8 KV heads of 64, 32 / 128
    # experts of 2880, top 4, a window of 128 on every other layer from layer 0, 201,088 tokens,
    # untied. 2 V d + L (attention 2 d (h + 2 h_kv) d_h + h d_h + d + h (sinks) + router E d + E +
    # experts E (3 d d_x + 2 d_x + d) + 2 d) + d.
    "gpt-oss-20b": 20_914_757_184,
    "gpt-oss-120b": 116_829_156_672,
    # mosaicml/mpt-7b: its config.json on the Hub (the architecture fields as the mpt-7b-instruct
    # copy quoted in an mlc-llm Relax port's notes shows them: d_model 4096, 32 heads, 32 layers,
    # vocab 50432, ALiBi, no_bias, expansion_ratio 4; "architectures" names transformers' own
    # MptForCausalLM instead of the remote-code MPTForCausalLM, auto_map, init_config and the
    # tokenizer name left out). No biases, weight-only LayerNorms, no position table: 50,432 x
    # 4,096 (embedding, tied head) + 32 x 201,334,784 + 4,096 (final norm).
    "mpt-7b": 6_649_286_656,
    # Llama 4's language models (Llama4ForCausalLM from the text_config of meta-llama/Llama-4-
    # Scout-17B-16E and -Maverick-17B-128E, costmodel/presets/llama4-*.json): 2 x 202,048 x 5,120
    # (embedding, head) + 48 layers of attention (62,914,560) and two norms, Scout's 48 expert
    # layers (16 experts and a shared one of 8,192, a router of 16 x 5,120), Maverick's 24 expert
    # layers of 128 experts and 24 dense layers of 16,384.
    "llama4-scout": 107_769_861_120,
    "llama4-maverick": 400_711_848_960,
    # NemotronHForCausalLM from the preset (Megatron-Bridge's Nemotron3NanoProvider; the card's "31.6B")
    "nemotron-3-nano": 31_577_937_344,
    # NemotronHForCausalLM from the preset (Megatron-Bridge's Nemotron3SuperProvider; the card's
    # "120B", and with its MTP module and 41 router bias buffers the Bridge card's 123,611,033,088
    # checkpoint elements: tests/test_nemotron_3_super.py); Ultra's from Megatron-LM's modelopt args
    # (the name's "550B")
    "nemotron-3-super": 120_668_687_360,
    "nemotron-3-ultra": 549_308_968_960,
    # Nemotron 3 Nano's sizes (Megatron-Bridge trains Lightning from Nano's provider with MTP 2; with the
    # MTP module and 24 router bias buffers the Bridge card's 32,913,266,240: tests/test_nemotron_3_super.py)
    "nemotron-3.5-lightning": 31_577_937_344,
}

#: What the Llama 4 model cards count besides the language model: the vision encoder and its
#: projector, 871,932,416 parameters in both (Llama4ForConditionalGeneration less
#: Llama4ForCausalLM, from the released vision_config: 34 layers of 1,408, 16 heads, MLP 5,632,
#: patch 14 at 336, projector 4,096 -> 5,120; tests/test_hf_llama4.py counts both classes).
LLAMA4_VISION = 871_932_416

#: Active parameters per token of the mixtures of experts (every routed expert a token skips left
#: out), by the same classes.
PUBLISHED_ACTIVE = {
    "nemotron-3-nano": 3_580_073_408,  # 6 of 128 routed experts a token (the card's "3.6B including embeddings")
    "nemotron-3-super": 12_770_216_960,  # 22 of 512 routed experts a token (the name's "A12B")
    "nemotron-3-ultra": 56_058_818_560,  # 22 of 512 (the name's "A55B")
    "nemotron-3.5-lightning": 3_580_073_408,  # Nano's: 6 of 128 a token (the name's "A3B")
    "mixtral-8x7b": 12_879_925_248,
    "mixtral-8x22b": 39_152_031_744,
    "deepseek-v3": 37_552_282_624,
    "gpt-oss-20b": 4_187_440_704,
    "gpt-oss-120b": 5_711_982_912,
    # one routed expert of 3 x 5,120 x 8,192 a token in each expert layer, the rest as the total
    "llama4-scout": 17_172_894_720,
    "llama4-maverick": 17_184_691_200,
}

#: What the model cards and papers print, as (total, active or None, the figure's unit, source).
#: A figure agrees with the class's count when they differ by less than one unit of its last
#: printed digit. Where they differ beyond rounding, the comment says why.
CARDS = {
    "llama3-8b": (8e9, None, 1e9, "Meta Llama 3 model card (github.com/meta-llama/llama3, "
                                  "MODEL_CARD.md): 8B"),
    "llama3-70b": (70e9, None, 1e9, "Meta Llama 3 model card: 70B"),
    "llama3.1-405b": (405e9, None, 1e9, "Llama 3.1 model card; Dubey et al. 2024, The Llama 3 Herd "
                                        "of Models, Table 3: 405B"),
    "qwen2.5-7b": (7.61e9, None, 0.01e9, "Qwen/Qwen2.5-7B model card: 7.61B (6.53B non-embedding)"),
    "qwen2.5-72b": (72.7e9, None, 0.1e9, "Qwen/Qwen2.5-72B model card: 72.7B (70.0B non-embedding)"),
    "qwen3-8b": (8.2e9, None, 0.1e9, "Qwen/Qwen3-8B model card: 8.2B (6.95B non-embedding)"),
    # Gemma 2 technical report (Gemma Team 2024), Table 2: non-embedding + embedding parameters.
    "gemma2-9b": (8_324_201_984 + 917_504_000, None, 1, "Gemma 2 report, Table 2"),
    "gemma2-27b": (26_047_480_320 + 1_179_648_000, None, 1, "Gemma 2 report, Table 2"),
    "phi3-mini": (3.8e9, None, 0.1e9, "Abdin et al. 2024, Phi-3 Technical Report: 3.8B"),
    "pythia-1.4b": (1_414_647_808, None, 1, "Biderman et al. 2023, Pythia, Table 1 (total params)"),
    # "7B" in the model card; the class holds 6.92B (4544-wide, 32 layers, multi-query).
    "falcon-7b": (7e9, None, 1e9, "tiiuae/falcon-7b model card: 7B"),
    "opt-1.3b": (1.3e9, None, 0.1e9, "Zhang et al. 2022, OPT, Table 1: 1.3B"),
    "bloom-560m": (559_214_592, None, 1, "bigscience/bloom-560m model card: 559,214,592 parameters"),
    "mixtral-8x7b": (47e9, 13e9, 1e9, "Jiang et al. 2024, Mixtral of Experts: 47B, 13B active"),
    "mixtral-8x22b": (141e9, 39e9, 1e9, "mistral.ai, Cheaper, Better, Faster, Stronger (2024): "
                                         "141B, 39B active"),
    # DeepSeek-V3 technical report: 671B total, 37B activated per token. The Hub checkpoint holds
    # 685B: the 14B multi-token-prediction module, which DeepseekV3ForCausalLM does not build. Our
    # 37.55B active counts the embedding table and the head (0.93B each).
    "deepseek-v3": (671e9, 37e9, 1e9, "DeepSeek-AI 2024, DeepSeek-V3 Technical Report: 671B, 37B "
                                      "activated"),
    # The checkpoint's count as the Open LLM Leaderboard read it from the Hub: "params": 34.389
    # (billions), "architectures": "LlamaForCausalLM" (huggingface.co/datasets/open-llm-leaderboard/
    # requests, 01-ai/Yi-34B-200K_eval_request_False_bfloat16_Original.json, revision 8ac1a1eb).
    "yi-34b-200k": (34.389e9, None, 0.001e9, "Open LLM Leaderboard request for 01-ai/Yi-34B-200K: "
                                             "34.389B parameters"),
    # OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card (arXiv 2508.10925), Table 1: total
    # parameters 20.91B and 116.83B; active 3.61B and 5.13B, where "Unembedding parameters are
    # counted towards active, but not embeddings": our active counts the embedding table too
    # (V d = 579,133,440 more), so the card's active is compared less it (GPT_OSS_CARD,
    # tests/test_hf_gpt_oss.py).
    "gpt-oss-20b": (20.91e9, None, 0.01e9, "gpt-oss model card (arXiv 2508.10925), Table 1: 20.91B"),
    "gpt-oss-120b": (116.83e9, None, 0.01e9, "gpt-oss model card (arXiv 2508.10925), Table 1: 116.83B"),
    "mpt-7b": (6.7e9, None, 0.1e9, "mosaicml/mpt-7b model card: 6.7B parameters "
                                   "(www.promptlayer.com/models/mpt-7b quotes it)"),
    # The Llama 4 model cards (huggingface.co/meta-llama/Llama-4-Scout-17B-16E and
    # -Maverick-17B-128E; Meta's blog "The Llama 4 herd", 2025-04-05) count the multimodal model:
    # the language model (FLAGSHIPS) plus LLAMA4_VISION, 108.64B and 401.58B. Scout's "109B"
    # agrees to its printed digit; Maverick's "400B" is a round figure (the class holds 1.58B
    # more), so its unit is 10B. Active: the language model's, 17.17B and 17.18B ("17B").
    "llama4-scout": (109e9, 17e9, 1e9, "Llama 4 Scout model card: 17B active, 109B total"),
    "llama4-maverick": (400e9, 17e9, 10e9, "Llama 4 Maverick model card: 17B active, 400B total"),
}

#: The gpt-oss model card's Table 1 beyond the totals (active parameters without the embedding
#: table; the MLP, attention and embedding + unembedding rows), in its units of 0.01B.
GPT_OSS_CARD = {
    "gpt-oss-20b": {"active": 3.61e9, "mlp": 19.12e9, "attention": 0.64e9, "embeddings": 1.16e9},
    "gpt-oss-120b": {"active": 5.13e9, "mlp": 114.71e9, "attention": 0.96e9, "embeddings": 1.16e9},
}


# Presets users asked for (families already supported), each the config.json a stored copy holds:
# - mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py (commit 79d603f0): llama3_1_70b
#   (meta-llama/Llama-3.1-70B-Instruct), llama3_2_1b (Llama-3.2-1B-Instruct), qwen3_0.6b,
#   gemma3_1b_it (google/gemma-3-1b-it), deepseek_v2_lite (deepseek-ai/DeepSeek-V2-Lite);
# - citsjtu2020/LLM-Prof sglang/Model_Config.md (commit 8434c8d1): Llama-3.1-8B, Llama-3.2-3B,
#   Qwen2.5-32B, Qwen3-30B-A3B, Qwen3-32B;
# - kevinstephano/thunder_model_blocks thunder_model_blocks/mistral/mistral_config.py (commit
#   a23dd8fe): mistralai/Mistral-Nemo-Base-2407;
# - NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/gemma/test_gemma3_bridge.py (commit
#   067f987d), its gemma3_27b_config_dict: google/gemma-3-27b's text model (Gemma3ForCausalLM), which
#   the fixture labels model_type "gemma3" (the multimodal wrapper's); the preset says "gemma3_text",
#   the model type of that class. Its shapes are the released model's as printed module by module
#   (sarghydesign.ro, "Gemma explained: What's new in Gemma 3": Gemma3TextScaledWordEmbedding(262208,
#   5376), 62 layers, q_proj 5376 -> 4096, k_proj and v_proj 5376 -> 2048, q_norm over 128);
# - mehmetcc/pal phi-4/config.json (commit b5a7a0de, "_name_or_path": "microsoft/phi-4"), verbatim.
#   Another stored copy (unattributed) has "sliding_window": null where this one has 16384, the
#   model's whole context: the same parameters, and a window that never bites within it.
# - mistralai/Mistral-7B-Instruct-v0.2 as a public script transcribes it with its _name_or_path
#   (find_string '"_name_or_path": "mistralai/Mistral-7B-Instruct-v0'); Mistral-7B-v0.3 and its
#   Instruct: the same with vocab_size 32768 (the v0.3 model card; no stored copy of that
#   config.json was found), so 6,291,456 = 2 x 768 x 4096 more than v0.2 (embedding and head);
# - Qwen/Qwen2.5-7B-Instruct (kevinstephano/thunder_model_blocks, find_string '"_name_or_path":
#   "Qwen/Qwen2.5-7B-Instruct"'), Qwen2.5-32B-Instruct (as vLLM issue 12328 quotes it) and
#   Qwen2.5-72B-Instruct: the base presets' shapes and counts with a 32,768-token context.
# - Qwen/Qwen3-235B-A22B, copied whole in public code (find_string '"num_hidden_layers": 94,':
#   a litellm_config.py's HARD_CODED_CONFIGS), Qwen3-30B-A3B's fields at 4096 wide, 94 layers,
#   64 query heads, experts of 1536, a dense width of 12288 (no layer dense).
# - Qwen/Qwen3-14B, Qwen3-4B, Qwen2.5-14B and Qwen2.5-3B as citsjtu2020/LLM-Prof
#   sglang/Model_Config.md (commit 8434c8d1) copies them whole; Qwen/Qwen3-1.7B as mlc-ai/mlc-llm's
#   model_preset.py (commit 79d603f0) does. The cards' figures are quoted from public copies of the
#   Hub cards (find_string 'Number of Parameters: 14.8B' and so on).
# - microsoft/Phi-3.5-mini-instruct as mlc-ai/mlc-llm's model_preset.py (commit 79d603f0) copies it
#   (its "phi-3_5" entry; the LongRoPE factors kept whole); deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B
#   as transformers 4.48.3 prints the Qwen2Config it loads (a public profiling script's docstring).
#   The R1 card's distill table gives no parameter count: not compared.
# - google/gemma-3-4b-it's text model: the Megatron-Bridge fixture next to gemma3-27b's
#   (gemma3_4b_config_dict, commit 067f987d), read as gemma3_text as gemma3-27b is.
# - Qwen/Qwen3-235B-A22B-Instruct-2507 as alibaba/InferSim hf_configs/qwen3-235B-A22B_config.json
#   (commit f2293dab) copies it: qwen3-235b-a22b's shapes with the 2507 revision's 262,144-token
#   context and rope_theta 5e6 (a preset of its own, as the aliases' policy asks); a public model
#   report quotes the same file under the Instruct-2507 checkpoint's path.
# - moonshotai/Kimi-K2-Instruct as a public model-information report quotes its config.json whole
#   (find_string 'moonshotai/Kimi-K2-Instruct/config.json`'), read as deepseek_v3 (its auto_map's
#   DeepseekV3Config). The same report sums the checkpoint's safetensors to 1,026,470,731,056: the
#   class's 1,026,408,209,408 plus 62,521,648 that are not parameters of the class (the fp8
#   blocks' weight_scale_inv tensors, 62,495,192; the routers' e_score_correction_bias, 23,040, a
#   buffer here; the stored rotary inv_freq, 3,416), to the element.
# - Qwen/Qwen2.5-0.5B as a public model-information report quotes its config.json (find_string
#   '/nfs/ofs-llm-ssd/models/opensource/'), whose sum of the checkpoint's safetensors, 494,032,768,
#   is the class's count. The same reports quote Qwen/Qwen2.5-3B-Instruct's config.json (qwen2.5-3b's,
#   32,768 tokens; safetensors 3,085,938,688): an alias. Qwen/QwQ-32B is not one: its config.json as
#   released had qwen2.5-32b's 131,072-token context, but the Hub's file now says 40,960 (QwenLM/QwQ
#   issue #26, 2025-05-13), so which context it stands for depends on the download date.
#   Each preset's "_source" says where its values come from.
# - The models published runs and users name (issue 18): LLaMA 1 (huggyllama/llama-7b ... -65b, the
#   LLaMA paper's runs), OPT 6.7B-175B, BLOOM 176B, Falcon 40B and 180B, MPT-30B and GPT-3 175B.
#   Sources: a public script quoting huggyllama/llama-7b's config.json whole (find_string
#   '"_name_or_path": "huggyllama'), with each size's shapes as erfanzar/EasyDeL
#   EasyDel/configs/configs.py (commit 02aa172c) lists them (llama_configs, and opt_configs '6.7b',
#   '13b', '66b' copied whole from the Hub, falcon_configs '40b' as released (RefinedWeb), mpt_configs
#   '30b'); OPT-30B and OPT-175B (metaseq only, no Hub weights) at Zhang et al. 2022, OPT, Table 1's
#   shapes with the released siblings' other fields; bigscience/bloom as a public test's mock of its
#   config.json (find_string '"n_layer": 70'); tiiuae/falcon-180B as NVIDIA/TensorRT-LLM's performance
#   overview transcribes it (find_string '"hidden_size": 14848'); GPT-3 175B at Brown et al. 2020,
#   Table 2.1's shapes as GPT2LMHeadModel. Then Code Llama 7B and 34B, TinyLlama 1.1B, SmolLM2-1.7B,
#   Qwen2.5-1.5B-Instruct, Gemma 2 2B, Phi-3-medium-4k, Yi-34B, DeepSeek LLM 67B, Mistral Small 3
#   (24B) and DeepSeek-V2 (236B), each from a stored copy of its config.json (public tests and
#   scripts quoting it whole; scaleapi's llm-engine hardware tests for CodeLlama-34B and
#   Phi-3-medium) or, for DeepSeek LLM 67B, its paper's Table 2. Then Qwen2.5-1.5B (base, 131,072
#   tokens), Mistral Large 2 (Mistral-Large-Instruct-2407, 123B) and Qwen2.5-Coder-32B, with
#   Lightning-AI/litgpt litgpt/config.py (commit 293089e2) for the last two's shapes. Each preset's
#   "_source" says more. GPT-3's Small, Medium, Large, 2.7B and 6.7B at Table 2.1's shapes as gpt3-175b
#   (its XL and 13B rows are not consistent shapes: d_model is not heads x d_head).
# The counts are the classes' (LlamaForCausalLM, Qwen3/Qwen3Moe/Qwen2, Gemma3ForCausalLM,
# MistralForCausalLM, Phi3ForCausalLM, DeepseekV2/V3ForCausalLM) built from those dicts under
# FakeTensorMode, which the tree equals (tests/test_presets_issue14.py,
# tests/test_presets_requested.py).
REQUESTED = {
    "llama3.1-8b": 8_030_261_248,
    "llama3.1-70b": 70_553_706_496,
    "llama3.2-1b": 1_235_814_400,
    "llama3.2-3b": 3_212_749_824,
    "qwen3-0.6b": 596_049_920,
    "qwen3-32b": 32_762_123_264,
    "qwen3-30b-a3b": 30_532_122_624,
    "qwen3-235b-a22b": 235_093_634_560,
    "qwen2.5-32b": 32_763_876_352,
    "gemma3-1b": 999_885_952,
    "mistral-nemo-12b": 12_247_782_400,
    "deepseek-v2-lite": 15_706_484_224,
    "gemma3-27b": 27_009_346_304,
    "phi-4": 14_659_507_200,
    "mistral-7b-v0.2": 7_241_732_096,
    "mistral-7b-v0.3": 7_248_023_552,
    "qwen2.5-7b-instruct": 7_615_616_512,
    "qwen2.5-32b-instruct": 32_763_876_352,
    "qwen2.5-72b-instruct": 72_706_203_648,
    "qwen3-14b": 14_768_307_200,
    "qwen3-4b": 4_022_468_096,
    "qwen3-1.7b": 1_720_574_976,
    "qwen2.5-14b": 14_770_033_664,
    "qwen2.5-3b": 3_085_938_688,
    "phi3.5-mini": 3_821_079_552,
    "deepseek-r1-distill-qwen-1.5b": 1_777_088_000,
    "gemma3-4b": 3_880_263_168,
    # keras-hub's gemma3_12b_text (11,765,788,416, a 262,144-row embedding) + 64 x 3840 for the Hub's 262,208
    "gemma3-12b": 11_766_034_176,
    "qwen3-235b-a22b-instruct-2507": 235_093_634_560,
    "kimi-k2": 1_026_408_209_408,
    "qwen2.5-0.5b": 494_032_768,
    # LlamaForCausalLM: 2 x 32,000 x d (embedding, head) + L (4 d^2 + 3 d d_ff + 2 d) + d
    "llama-7b": 6_738_415_616,
    "llama-13b": 13_015_864_320,
    "llama-30b": 32_528_943_616,
    "llama-65b": 65_285_660_672,
    # OPTForCausalLM (tied head): (50,272 + 2,050) d (tokens; positions, offset 2) + L (12 d^2 + 13 d:
    # q, k, v, out and the 4d MLP with biases, two LayerNorms) + 2 d (final LayerNorm)
    "opt-6.7b": 6_658_473_984,
    "opt-13b": 12_853_473_280,
    "opt-30b": 29_974_540_288,
    "opt-66b": 65_719_701_504,
    "opt-175b": 174_604_468_224,
    "bloom-176b": 176_247_271_424,  # BloomForCausalLM: the model card's count to the parameter
    "falcon-40b": 41_303_293_952,  # FalconForCausalLM, tied head (the Falcon paper, Table 16)
    "falcon-180b": 178_557_088_768,
    "mpt-30b": 29_957_200_896,  # MptForCausalLM, no biases, tied head
    "gpt3-175b": 174_604_259_328,  # GPT2LMHeadModel, tied head
    "codellama-7b": 6_738_546_688,  # 32,016 tokens: 2 x 16 x 4,096 more than llama-7b
    "codellama-34b": 33_743_970_304,
    "tinyllama-1.1b": 1_100_048_384,
    "smollm2-1.7b": 1_711_376_384,
    "qwen2.5-1.5b-instruct": 1_543_714_304,
    "gemma2-2b": 2_614_341_888,
    "phi3-medium": 13_960_238_080,
    "yi-34b": 34_388_917_248,  # yi-34b-200k's shapes
    "deepseek-llm-67b": 67_425_001_472,
    "mistral-small-24b": 23_572_403_200,
    "deepseek-v2": 235_741_434_880,  # DeepseekV2ForCausalLM
    "qwen2.5-1.5b": 1_543_714_304,  # qwen2.5-1.5b-instruct's shapes, a 131,072-token context
    "mistral-large-2407": 122_610_069_504,
    "qwen2.5-coder-32b": 32_763_876_352,  # qwen2.5-32b-instruct's shapes and context
    # GPT-3's smaller sizes (Table 2.1) as GPT2LMHeadModel, tied: L (12 d^2 + 13 d) + (50,257 + 2,048) d + 2 d
    "gpt3-125m": 125_226_240,
    "gpt3-350m": 355_871_744,
    "gpt3-760m": 760_300_032,
    "gpt3-2.7b": 2_651_553_280,
    "gpt3-6.7b": 6_658_404_352,
    "glm-5": 743_911_199_232,  # GlmMoeDsaForCausalLM (tests/test_hf_glm_moe_dsa.py)
    "deepseek-v4-flash": 284_325_869_015,  # DeepseekV4ForCausalLM at its defaults (tests/test_hf_deepseek_v4.py)
}
REQUESTED_ACTIVE = {
    "qwen3-30b-a3b": 3_353_032_704,
    "qwen3-235b-a22b": 22_190_763_520,
    "deepseek-v2-lite": 2_661_150_208,
    "qwen3-235b-a22b-instruct-2507": 22_190_763_520,
    "kimi-k2": 32_861_477_888,
    # 6 of 160 routed experts of 3 x 5,120 x 1,536 a token in each of the 59 expert layers
    "deepseek-v2": 21_375_800_320,
    "glm-5": 41_784_709_632,  # 8 of 256 experts of 3 x 6,144 x 2,048 a token in each of the 75 MoE layers
    "deepseek-v4-flash": 13_793_261_015,  # 6 of 256 experts of 3 x 4,096 x 2,048 a token in each of the 43 layers
}
REQUESTED_CARDS = {
    "llama3.1-8b": (8e9, None, 1e9, "Llama 3.1 model card (meta-llama/Llama-3.1-8B): 8B"),
    "llama3.1-70b": (70e9, None, 1e9, "Llama 3.1 model card (meta-llama/Llama-3.1-70B): 70B"),
    "llama3.2-1b": (1.23e9, None, 0.01e9, "Llama 3.2 model card (meta-llama/Llama-3.2-1B): "
                                          "1B (1.23B)"),
    "llama3.2-3b": (3.21e9, None, 0.01e9, "Llama 3.2 model card: 3B (3.21B)"),
    "qwen3-0.6b": (0.6e9, None, 0.1e9, "Qwen/Qwen3-0.6B model card: 0.6B (0.44B non-embedding)"),
    "qwen3-32b": (32.8e9, None, 0.1e9, "Qwen/Qwen3-32B model card: 32.8B (31.2B non-embedding)"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, 0.1e9, "Qwen/Qwen3-30B-A3B model card: 30.5B in total, 3.3B "
                                            "activated"),
    "qwen3-235b-a22b": (235e9, 22e9, 1e9, "Qwen/Qwen3-235B-A22B model card: 235B in total, 22B "
                                          "activated"),
    "gemma3-1b": (1e9, None, 1e9, "Gemma 3 model card (google/gemma-3-1b-it): 1B"),
    "gemma3-27b": (27e9, None, 1e9, "Gemma 3 model card (google/gemma-3-27b-it): 27B"),
    "mistral-nemo-12b": (12e9, None, 1e9, "mistral.ai, Mistral NeMo (2024): a 12B model"),
    "phi-4": (14e9, None, 1e9, "Abdin et al. 2024, Phi-4 Technical Report: a 14-billion parameter "
                              "language model"),
    # (qwen2.5-32b: Qwen/Qwen2.5-32B's card prints 32.5B, 31.0B non-embedding, 0.26B under the
    # class's 32.76B, which no field of its config.json explains: not compared.)
    # The card's 2.4B activated leaves out the embedding table (a lookup, 0.21B): our 2.66B
    # counts it, as DeepSeek-V3's entry above does; only the total is compared.
    "deepseek-v2-lite": (15.7e9, None, 0.1e9, "deepseek-ai/DeepSeek-V2-Lite model card: 15.7B "
                                              "total, 2.4B activated"),
    "qwen2.5-7b-instruct": (7.61e9, None, 0.01e9, "Qwen/Qwen2.5-7B-Instruct model card: 7.61B (6.53B "
                                                  "non-embedding)"),
    "qwen2.5-72b-instruct": (72.7e9, None, 0.1e9, "Qwen/Qwen2.5-72B-Instruct model card: 72.7B (70.0B "
                                                  "non-embedding)"),
    "qwen3-14b": (14.8e9, None, 0.1e9, "Qwen/Qwen3-14B model card: 14.8B (13.2B non-embedding)"),
    "qwen3-4b": (4.0e9, None, 0.1e9, "Qwen/Qwen3-4B model card: 4.0B (3.6B non-embedding)"),
    "qwen3-1.7b": (1.7e9, None, 0.1e9, "Qwen/Qwen3-1.7B model card: 1.7B (1.4B non-embedding)"),
    "qwen2.5-14b": (14.7e9, None, 0.1e9, "Qwen/Qwen2.5-14B model card: 14.7B (13.1B non-embedding)"),
    "qwen2.5-3b": (3.09e9, None, 0.01e9, "Qwen/Qwen2.5-3B model card: 3.09B (2.77B non-embedding)"),
    "phi3.5-mini": (3.8e9, None, 0.1e9, "microsoft/Phi-3.5-mini-instruct model card: Phi-3.5-mini has 3.8B "
                                       "parameters"),
    "gemma3-4b": (4e9, None, 1e9, "Gemma 3 model card (google/gemma-3-4b-it): 4B (with its vision "
                                   "encoder; the language model alone is 3.88B)"),
    "gemma3-12b": (12e9, None, 1e9, "Gemma 3 model card (google/gemma-3-12b-pt): 12B (with its vision "
                                    "encoder; the language model alone is 11.77B)"),
    "qwen3-235b-a22b-instruct-2507": (235e9, 22e9, 1e9, "Qwen/Qwen3-235B-A22B-Instruct-2507 "
                                                        "model card: 235B in total, 22B activated"),
    "kimi-k2": (1e12, None, 1e11, "Kimi K2 (moonshotai/Kimi-K2 README, arXiv 2507.20534): "
                                  "32 billion activated parameters and 1 trillion total parameters"),
    "qwen2.5-0.5b": (0.49e9, None, 0.01e9, "Qwen/Qwen2.5-0.5B model card: 0.49B (0.36B non-embedding)"),
    "llama-7b": (6.7e9, None, 0.1e9, "Touvron et al. 2023, LLaMA, Table 2: 6.7B"),
    "llama-13b": (13.0e9, None, 0.1e9, "Touvron et al. 2023, LLaMA, Table 2: 13.0B"),
    "llama-30b": (32.5e9, None, 0.1e9, "Touvron et al. 2023, LLaMA, Table 2: 32.5B"),
    "llama-65b": (65.2e9, None, 0.1e9, "Touvron et al. 2023, LLaMA, Table 2: 65.2B"),
    "opt-6.7b": (6.7e9, None, 0.1e9, "Zhang et al. 2022, OPT, Table 1: 6.7B"),
    "opt-13b": (13e9, None, 1e9, "Zhang et al. 2022, OPT, Table 1: 13B"),
    "opt-30b": (30e9, None, 1e9, "Zhang et al. 2022, OPT, Table 1: 30B"),
    "opt-66b": (66e9, None, 1e9, "Zhang et al. 2022, OPT, Table 1: 66B"),
    "opt-175b": (175e9, None, 1e9, "Zhang et al. 2022, OPT, Table 1: 175B"),
    "bloom-176b": (176_247_271_424, None, 1, "bigscience/bloom model card: 176,247,271,424 parameters "
                                              "(find_string '176,247,271,424')"),
    "mpt-30b": (30e9, None, 1e9, "mosaicml/mpt-30b model card: MPT-30B, 30B parameters"),
    # The abstract's "175 billion parameters"; Table 2.1 prints 175.0B, 0.40B over the class's
    # 174.60B, which no field of the table explains (the paper does not say how it counts).
    "gpt3-175b": (175e9, None, 1e9, "Brown et al. 2020, Language Models are Few-Shot Learners: "
                                    "175 billion parameters"),
    "codellama-7b": (7e9, None, 1e9, "Roziere et al. 2023, Code Llama: 7B"),
    "codellama-34b": (34e9, None, 1e9, "Roziere et al. 2023, Code Llama: 34B"),
    "tinyllama-1.1b": (1.1e9, None, 0.1e9, "Zhang et al. 2024, TinyLlama: a 1.1B language model"),
    "smollm2-1.7b": (1.7e9, None, 0.1e9, "HuggingFaceTB/SmolLM2-1.7B model card: 1.7B parameters"),
    "qwen2.5-1.5b-instruct": (1.54e9, None, 0.01e9, "Qwen/Qwen2.5-1.5B-Instruct model card: 1.54B (1.31B "
                                                    "non-embedding; find_string 'Number of Parameters: "
                                                    "1.54B')"),
    # Gemma 2 report, Table 2: 2,024,517,888 non-embedding parameters, which the class holds exactly;
    # its embedding row (590,118,912) counts the 256,128-row table of its Table 1, the released
    # config.json 256,000 rows (589,824,000; 128 x 2,304 fewer), as gemma2-9b's entry does.
    "gemma2-2b": (2_024_517_888 + 589_824_000, None, 1, "Gemma 2 report, Table 2"),
    "phi3-medium": (14e9, None, 1e9, "Abdin et al. 2024, Phi-3 Technical Report: phi-3-medium, 14B"),
    "yi-34b": (34e9, None, 1e9, "01-ai/Yi-34B model card: 34B"),
    "deepseek-llm-67b": (67e9, None, 1e9, "DeepSeek-AI 2024, DeepSeek LLM (arXiv 2401.02954): 67B"),
    "mistral-small-24b": (24e9, None, 1e9, "mistral.ai, Mistral Small 3 (2025): a 24B model"),
    "deepseek-v2": (236e9, 21e9, 1e9, "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434): 236B total "
                                      "parameters, 21B activated for each token"),
    "qwen2.5-1.5b": (1.54e9, None, 0.01e9, "Qwen/Qwen2.5-1.5B model card: 1.54B (1.31B non-embedding)"),
    "mistral-large-2407": (123e9, None, 1e9, "mistral.ai, Large Enough (2024-07-24): Mistral Large 2, "
                                             "123 billion parameters"),
    # (qwen2.5-coder-32b: its card prints 32.5B, as Qwen2.5-32B's does, 0.26B under the class's
    # 32.76B: not compared, as qwen2.5-32b is not.)
    "gpt3-125m": (125e6, None, 1e6, "Brown et al. 2020, Table 2.1: GPT-3 Small, 125M"),
    "gpt3-760m": (760e6, None, 1e6, "Brown et al. 2020, Table 2.1: GPT-3 Large, 760M"),
    "gpt3-2.7b": (2.7e9, None, 0.1e9, "Brown et al. 2020, Table 2.1: GPT-3 2.7B"),
    "gpt3-6.7b": (6.7e9, None, 0.1e9, "Brown et al. 2020, Table 2.1: GPT-3 6.7B"),
    # (gpt3-350m: Table 2.1's "350M" is 5.87M under the class's 355.87M, more than its printed unit,
    # which no field of the table explains: not compared.)
    # (falcon-40b and falcon-180b: their names' 40B and 180B are round figures, 1.30B under and
    # 1.44B over the classes' 41.30B and 178.56B with the tied head the Falcon paper (Almazrouei
    # et al. 2023, Table 16) describes: not compared.)
    "glm-5": (744e9, None, 1e9, "GLM-5 technical report (GLM-5: from Vibe Coding to Agentic "
                              "Engineering) as glennklockwood.com/garden/GLM-5 tabulates it: 744B "
                              "total, 40B activated (the class's 41.78B with the embedding and head)"),
}
FLAGSHIPS.update(REQUESTED)
PUBLISHED_ACTIVE.update(REQUESTED_ACTIVE)
CARDS.update(REQUESTED_CARDS)
