"""Hardware profiles derived by a roofline estimate from public specs (DESIGN.md).

Per-request latency model (ProServe Eq. 4-7; HFX Eq. 1-2 are the same coefficients):
  t_c = weight bytes / (BW * mbu) + step overhead      weights stream once per iteration
  c_p = 2 * params / (peak * mfu)                      dense FLOPs per prefill token
  a_p = 2 * layers * hidden / (peak * mfu)             causal attention within a chunk (lq^2/2 pairs x 4 FLOPs)
  b_p = 4 * layers * hidden / (peak * mfu)             attention of new tokens to cached ones
  a_d = KV bytes per token / (BW * mbu)                each decode reads every cached token's KV
  b_d = decode_overlap * 2 * params / peak             the per-sequence compute that weight
                                                       streaming does not hide (calibrated)
  KV bytes/token = 2 (K,V) * layers * kv_heads * head_dim * kv bytes
  blocks = (memory * devices * 0.9 - weights) / (KV bytes/token * block size)
The efficiency knobs (mfu, mbu, overhead, decode_overlap) are calibration: each profile's
`checks` compare the result with the number a paper quotes. Regenerate the JSON files with
`python -m slocore.profiles.roofline --regen`.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

DATA = Path(__file__).with_name("data")
GIB = 1024**3

SPECS = {
    "h100-llama2-7b": dict(
        description="NVIDIA H100 SXM 80GB, Llama-2-7B bf16, TP=1",
        hardware=dict(name="H100 SXM5 80GB", peak_tflops_bf16=989.0, mem_bandwidth_gbps=3350.0, mem_gib=80,
                      interconnect_gbps=450.0, num_devices=1,
                      sources=["NVIDIA H100 datasheet: 989 TFLOPS dense BF16, 3.35 TB/s HBM3, NVLink 900 GB/s bidirectional"]),
        model=dict(name="Llama-2-7B", params_b=6.74, bytes_per_param=2, kv_bytes=2, layers=32, hidden=4096,
                   kv_heads=32, head_dim=128, sources=["Llama 2 paper / HF config: 32 layers, 4096 hidden, 32 KV heads"]),
        efficiency=dict(mfu_prefill=0.5, mbu_decode=0.75, step_overhead_s=0.003, decode_overlap=0.5,
                        notes="vLLM on H100: ~50% MFU in prefill, ~75% of HBM bandwidth in decode, ~3 ms scheduler/launch overhead"),
        kv_transfer=dict(fixed_s=0.002),
        checks=[dict(what="decode step, batch 1, context 512", paper_value=0.009, unit="s", batch=1, ctx=512,
                     source="public vLLM benchmarks, Llama-2-7B bf16 on H100 (~7-10 ms/token), approximate",
                     tolerance_rel=0.3)]),
    "ascend910b-qwen7b": dict(
        description="Huawei Ascend 910B 64GB, Qwen2.5-7B bf16, TP=1 (HFX testbed)",
        hardware=dict(name="Ascend 910B", peak_tflops_bf16=313.0, mem_bandwidth_gbps=1600.0, mem_gib=64,
                      interconnect_gbps=56.0, num_devices=1,
                      sources=["Ascend 910B public specs: ~313 TFLOPS FP16, 1.6 TB/s HBM2e, 64 GB; HCCS 56 GB/s per link"]),
        model=dict(name="Qwen2.5-7B", params_b=7.62, bytes_per_param=2, kv_bytes=2, layers=28, hidden=3584,
                   kv_heads=4, head_dim=128, sources=["Qwen2.5-7B config: 28 layers, 3584 hidden, 4 KV heads (GQA)"]),
        efficiency=dict(mfu_prefill=0.4, mbu_decode=0.6, step_overhead_s=0.008, decode_overlap=0.5,
                        notes="vLLM-Ascend: lower MFU/MBU than CUDA and a larger per-step host overhead (ARM CPUs)"),
        kv_transfer=dict(fixed_s=0.003),
        checks=[dict(what="decode step, batch 1, context 512 (no paper number; plausibility 15-30 ms)", paper_value=0.022,
                     unit="s", batch=1, ctx=512, source="HFX 000 quotes no per-step latency; plausibility range",
                     tolerance_rel=0.4)]),
    "ascend910b-qwen32b": dict(
        description="2x Ascend 910B, Qwen2.5-32B bf16, TP=2 (HFX testbed)",
        hardware=dict(name="Ascend 910B x2", peak_tflops_bf16=313.0, mem_bandwidth_gbps=1600.0, mem_gib=64,
                      interconnect_gbps=56.0, num_devices=2, sources=["as ascend910b-qwen7b, two devices (TP=2)"]),
        model=dict(name="Qwen2.5-32B", params_b=32.8, bytes_per_param=2, kv_bytes=2, layers=64, hidden=5120,
                   kv_heads=8, head_dim=128, sources=["Qwen2.5-32B config: 64 layers, 5120 hidden, 8 KV heads"]),
        efficiency=dict(mfu_prefill=0.35, mbu_decode=0.5, step_overhead_s=0.012, decode_overlap=0.5,
                        notes="TP=2 all-reduces per layer lower the effective MFU/MBU and add overhead"),
        kv_transfer=dict(fixed_s=0.004),
        checks=[dict(what="decode step, batch 1, context 512 (no paper number; plausibility 40-70 ms)", paper_value=0.055,
                     unit="s", batch=1, ctx=512, source="HFX 000 quotes no per-step latency; plausibility range",
                     tolerance_rel=0.4)]),
    "h20-qwen3-32b": dict(
        description="NVIDIA H20 141GB, Qwen3-32B bf16, TP=1 (SIBYL testbed)",
        hardware=dict(name="H20 141GB", peak_tflops_bf16=148.0, mem_bandwidth_gbps=4800.0, mem_gib=141,
                      interconnect_gbps=450.0, num_devices=1,
                      sources=["NVIDIA H20 (141 GB HBM3e variant): 148 TFLOPS BF16 dense, 4.8 TB/s, NVLink 900 GB/s"]),
        model=dict(name="Qwen3-32B", params_b=32.8, bytes_per_param=2, kv_bytes=2, layers=64, hidden=5120,
                   kv_heads=8, head_dim=128, sources=["Qwen3-32B config: 64 layers, 5120 hidden, 8 KV heads"]),
        efficiency=dict(mfu_prefill=0.6, mbu_decode=0.8, step_overhead_s=0.005, decode_overlap=0.47,
                        notes="compute-weak, bandwidth-rich: decode_overlap calibrated so N/step(N) follows SIBYL's TPS(N) fit"),
        kv_transfer=dict(fixed_s=0.002),
        tps_quadratic=dict(a=-0.423, b=44.766, c=-7.753),
        checks=[dict(what=f"throughput N/step(N) at N={n}, context 1500", paper_value=round(-0.423 * n * n + 44.766 * n - 7.753, 3),
                     unit="tok/s", batch=n, ctx=1500, kind="tps",
                     source="SIBYL 004 appendix I: TPS(N) = -0.423 N^2 + 44.766 N - 7.753 on H20", tolerance_rel=0.25)
                for n in (8, 16, 32)]),
    "rtx4060ti-chatglm2-6b-int4": dict(
        description="NVIDIA RTX 4060 Ti 16GB, ChatGLM2-6B INT4, HF transformers (SLICE testbed)",
        hardware=dict(name="RTX 4060 Ti 16GB", peak_tflops_bf16=22.0, mem_bandwidth_gbps=288.0, mem_gib=16,
                      interconnect_gbps=16.0, num_devices=1,
                      sources=["NVIDIA RTX 4060 Ti: 22 TFLOPS FP16 (non-tensor), 288 GB/s GDDR6, PCIe 4.0 x8 (SLICE used PCIe 3.0 x16)"]),
        model=dict(name="ChatGLM2-6B-INT4", params_b=6.24, bytes_per_param=0.56, kv_bytes=2, layers=28, hidden=4096,
                   kv_heads=2, head_dim=128, sources=["ChatGLM2-6B config: 28 layers, 4096 hidden, multi-query 2 groups; INT4 weights + scales"]),
        efficiency=dict(mfu_prefill=0.2, mbu_decode=0.35, step_overhead_s=0.01, decode_overlap=18.5,
                        notes="HF transformers with INT4 dequantisation per sequence and unfused kernels: per-sequence "
                              "decode cost ~18x its FLOP roofline, calibrated to SLICE Table II (9 decodes -> ~129 ms)"),
        kv_transfer=dict(fixed_s=0.005),
        checks=[dict(what="Orca batch of 9 decodes, context 300 (SLICE Table II: 128.59 ms Orca, 129.56 ms FastServe)",
                     paper_value=0.1286, unit="s", batch=9, ctx=300,
                     source="SLICE 001 Table II", tolerance_rel=0.15)]),
}


def derive(spec: dict) -> dict:
    hw, m, eff = spec["hardware"], spec["model"], spec["efficiency"]
    n_dev = hw["num_devices"]
    peak = hw["peak_tflops_bf16"] * 1e12 * n_dev
    bw = hw["mem_bandwidth_gbps"] * 1e9 * n_dev
    params = m["params_b"] * 1e9
    weight_bytes = params * m["bytes_per_param"]
    flops = peak * eff["mfu_prefill"]
    kv_bpt = 2 * m["layers"] * m["kv_heads"] * m["head_dim"] * m["kv_bytes"]
    per_request = dict(
        t_c=weight_bytes / (bw * eff["mbu_decode"]) + eff["step_overhead_s"],
        a_p=2 * m["layers"] * m["hidden"] / flops,
        b_p=4 * m["layers"] * m["hidden"] / flops,
        c_p=2 * params / flops,
        a_d=kv_bpt / (bw * eff["mbu_decode"]),
        b_d=eff["decode_overlap"] * 2 * params / peak,
    )
    block = 16
    free = hw["mem_gib"] * GIB * n_dev * 0.9 - weight_bytes
    kv = dict(block_size=block, num_blocks=int(free // (kv_bpt * block)), bytes_per_token=kv_bpt)
    kv_transfer = dict(bandwidth_bytes_per_s=hw["interconnect_gbps"] * 1e9, fixed_s=spec["kv_transfer"]["fixed_s"])
    return dict(per_request={k: float(f"{v:.6g}") for k, v in per_request.items()}, kv=kv, kv_transfer=kv_transfer)


def decode_step(per_request: dict, batch: int, ctx: int) -> float:
    """Seconds for one decode iteration of `batch` requests at context `ctx` (Eq. 7)."""
    return per_request["t_c"] + batch * (per_request["a_d"] * ctx + per_request["b_d"])


def check_value(per_request: dict, check: dict) -> float:
    step = decode_step(per_request, check["batch"], check["ctx"])
    return check["batch"] / step if check.get("kind") == "tps" else step


def build(name: str) -> dict:
    spec = SPECS[name]
    d = derive(spec)
    checks = [dict(c, derived_value=float(f"{check_value(d['per_request'], c):.6g}")) for c in spec["checks"]]
    out = dict(name=name, version=1, description=spec["description"], hardware=spec["hardware"], model=spec["model"],
               efficiency=spec["efficiency"], **d, checks=checks,
               sources=spec["hardware"]["sources"] + spec["model"]["sources"] + sorted({c["source"] for c in checks}))
    if "tps_quadratic" in spec:
        out["tps_quadratic"] = spec["tps_quadratic"]
    return out


def regen() -> None:
    DATA.mkdir(exist_ok=True)
    for name in SPECS:
        (DATA / f"{name}.json").write_text(json.dumps(build(name), indent=1) + "\n")
        print(f"wrote {DATA / (name + '.json')}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regen"]:
        regen()
    else:
        print(__doc__)
