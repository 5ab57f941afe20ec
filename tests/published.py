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
    # Llama 4's language models (Llama4ForCausalLM from the text_config of meta-llama/Llama-4-
    # Scout-17B-16E and -Maverick-17B-128E, costmodel/presets/llama4-*.json): 2 x 202,048 x 5,120
    # (embedding, head) + 48 layers of attention (62,914,560) and two norms, Scout's 48 expert
    # layers (16 experts and a shared one of 8,192, a router of 16 x 5,120), Maverick's 24 expert
    # layers of 128 experts and 24 dense layers of 16,384.
    "llama4-scout": 107_769_861_120,
    "llama4-maverick": 400_711_848_960,
}

#: What the Llama 4 model cards count besides the language model: the vision encoder and its
#: projector, 871,932,416 parameters in both (Llama4ForConditionalGeneration less
#: Llama4ForCausalLM, from the released vision_config: 34 layers of 1,408, 16 heads, MLP 5,632,
#: patch 14 at 336, projector 4,096 -> 5,120; tests/test_hf_llama4.py counts both classes).
LLAMA4_VISION = 871_932_416

#: Active parameters per token of the mixtures of experts (every routed expert a token skips left
#: out), by the same classes.
PUBLISHED_ACTIVE = {
    "mixtral-8x7b": 12_879_925_248,
    "mixtral-8x22b": 39_152_031_744,
    "deepseek-v3": 37_552_282_624,
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
    # The Llama 4 model cards (huggingface.co/meta-llama/Llama-4-Scout-17B-16E and
    # -Maverick-17B-128E; Meta's blog "The Llama 4 herd", 2025-04-05) count the multimodal model:
    # the language model (FLAGSHIPS) plus LLAMA4_VISION, 108.64B and 401.58B. Scout's "109B"
    # agrees to its printed digit; Maverick's "400B" is a round figure (the class holds 1.58B
    # more), so its unit is 10B. Active: the language model's, 17.17B and 17.18B ("17B").
    "llama4-scout": (109e9, 17e9, 1e9, "Llama 4 Scout model card: 17B active, 109B total"),
    "llama4-maverick": (400e9, 17e9, 10e9, "Llama 4 Maverick model card: 17B active, 400B total"),
}

