"""What runs inside a measuring child: the parent (bench.run.runner, bench.run.launchers) starts
it, this measures and reports.

    worker   `python -m bench.child.worker`: one point's session and one JSON response
             on its pipe (a probing child: one probe after another, each answered)
    measure  warm-up, measured steps (or epochs, or steps to a loss) under the trackers
    rank     which of torchrun's ranks this process is, what ranks send each other
             (bounded JSON), how ranks on several machines prove they share the run's
             secret (the parent reads the secret's name and checks its form here too)
"""
