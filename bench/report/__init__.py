"""Presenting results: terminal tables, live progress (later: compare, plots)."""
