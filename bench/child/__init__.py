"""What runs inside a measuring child: the parent (bench.runner, bench.launchers) starts
it, this measures and reports.

    worker   `python -m bench.child.worker`: one point's session, warm-up, measured
             steps under the trackers, one JSON response on its pipe
    rank     which of torchrun's ranks this process is, what ranks send each other
             (bounded JSON), how ranks on several machines prove they share the run's
             secret (the parent reads the secret's name and checks its form here too)
"""
