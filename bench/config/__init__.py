"""The run's configuration: every option declared once (options.py), RunConfig and
PointConfig, their checks, the sweep's axes and what --data names."""
