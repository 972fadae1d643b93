"""Platforms: where training runs (detection, synchronisation, memory telemetry)."""
