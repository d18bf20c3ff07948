"""Integrations with serving engines: ``vllm`` (a V1 scheduler plugin; vLLM-Ascend uses the same;
and the fast-scaling worker extension ``vllm.weight_sync``), and ``ray_serve`` (a Ray Serve request
router over slocore policies and the HFX scaler as Ray Serve autoscaling)."""
