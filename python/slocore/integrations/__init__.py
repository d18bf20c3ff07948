"""Integrations with serving engines: ``vllm`` (a V1 scheduler plugin; vLLM-Ascend uses the same;
and the fast-scaling worker extension ``vllm.weight_sync``)."""
