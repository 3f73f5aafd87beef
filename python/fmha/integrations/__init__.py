"""Integrations of fmha with other libraries: fmha.integrations.transformers."""
