"""nasnet-large: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside
this one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="nasnet-large",
        description="NASNet-A Large (timm's nasnetalarge) at 331x331, as the 2020 GPU comparison",
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=88_753_150,  # timm's nasnetalarge
        num_classes=1000,
        sample_shape=(3, 331, 331),
        default_batch_size=16,
        min_batch_size=2,  # batch norm
        epoch_samples=1_281_167,
        dataset="synthetic ImageNet-shaped images",
    ),
)
