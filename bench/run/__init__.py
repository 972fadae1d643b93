"""The parent: the runner, its launchers (one process, torchrun, a probing child),
the max-batch search, the cost model, the runtime (allocator, OpenMP, NUMA), compiler
caches, stopping and progress."""
