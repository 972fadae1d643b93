"""Whole-run strategies that decide points as they go: the ladder and tune."""
