"""Trackers: what is measured around the training steps (time, memory; later energy)."""
