"""Frameworks: how the work is expressed (torch, later tensorflow and jax)."""
