"""tiny: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this one
builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="tiny",
        description="A two-layer CNN on 3x16x16 images for fast tests (5,354 parameters)",
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=5_354,
        sample_shape=(3, 16, 16),
        num_classes=10,
        default_batch_size=16,
        epoch_samples=1024,
    ),
)
