"""Glue to real serving engines (vLLM)."""
