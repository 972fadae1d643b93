"""Fleets: the same bench commands on many cloud machines, launched by SkyPilot (the
engine users already run), their results gathered and compared. config reads the fleet
file, tasks turns each target into a SkyPilot task, launch talks to SkyPilot, gather
brings the results back."""
