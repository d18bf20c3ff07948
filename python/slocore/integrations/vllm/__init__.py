"""vLLM integration: the fast-scaling worker extension (weight_sync), engine launch specs
(engine) and a tiny test model (tiny_model)."""
