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
