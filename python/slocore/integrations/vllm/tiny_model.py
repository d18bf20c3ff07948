"""A tiny Llama model directory that vLLM serves with ``--load-format dummy``: no download.

config.json (hidden 128, 2 layers, 2 heads, head_dim 64, vocab 1024, bf16) plus a byte-level
BPE tokenizer trained here with ``tokenizers`` and saved with transformers'
``PreTrainedTokenizerFast`` (~70 KB). Needs the ``vllm`` extra's packages (transformers).

    python -m slocore.integrations.vllm.tiny_model DIR

``make_tiny_llama(DIR, **config)`` also writes a random safetensors checkpoint with Hugging
Face names (for the fast-scaling tests: real weights to load and transfer), optionally of
another size (e.g. hidden_size=1024, num_hidden_layers=12, intermediate_size=4096: 0.4 GB).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1024,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


def write(dir_: str | Path, config: dict | None = None) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    cfg = CONFIG if config is None else config
    d = Path(dir_)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    (d / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}))
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    import random

    rng = random.Random(0)  # enough distinct pseudo-words for BPE to fill the whole vocabulary
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    corpus = [" ".join(rng.choice(words) for _ in range(32)) for _ in range(2000)]
    trainer = trainers.BpeTrainer(
        vocab_size=cfg["vocab_size"],
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    fast.save_pretrained(str(d))
    return d


def checkpoint_tensors(seed: int = 0, cfg: dict = CONFIG):
    """Random bf16 weights with Hugging Face Llama names and shapes for `cfg`."""
    import torch

    g = torch.Generator().manual_seed(seed)
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]

    def w(*shape):
        return (torch.randn(*shape, generator=g) * 0.1).to(torch.bfloat16)

    t = {
        "model.embed_tokens.weight": w(v, h),
        "lm_head.weight": w(v, h),
        "model.norm.weight": torch.ones(h, dtype=torch.bfloat16),
    }
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        t.update(
            {
                p + "self_attn.q_proj.weight": w(q, h),
                p + "self_attn.k_proj.weight": w(kv, h),
                p + "self_attn.v_proj.weight": w(kv, h),
                p + "self_attn.o_proj.weight": w(h, q),
                p + "mlp.gate_proj.weight": w(i, h),
                p + "mlp.up_proj.weight": w(i, h),
                p + "mlp.down_proj.weight": w(h, i),
                p + "input_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
                p + "post_attention_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
            }
        )
    return t


def make_tiny_llama(dir_: str | Path, seed: int = 0, weights: bool = True, **overrides) -> str:
    """`write` plus, when `weights`, a random model.safetensors; ``overrides`` change the config."""
    cfg = {**CONFIG, **overrides}
    d = write(dir_, cfg)
    if weights:
        from safetensors.torch import save_file

        save_file(checkpoint_tensors(seed, cfg), str(d / "model.safetensors"))
    return str(d)


if __name__ == "__main__":
    args = sys.argv[1:]
    with_weights = "--weights" in args  # also write a random model.safetensors (needs torch)
    args = [a for a in args if a != "--weights"]
    d = args[0] if args else "tiny-llama"
    print(make_tiny_llama(d) if with_weights else write(d))
