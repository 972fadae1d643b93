"""resnet50-cifar: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside
this one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="resnet50-cifar",
        description="ResNet-50 on CIFAR-10-shaped 32x32 images, 10 classes (M2 Max vs V100 study)",
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=23_528_522,
        sample_shape=(3, 32, 32),
        num_classes=10,
        default_batch_size=64,
        min_batch_size=2,  # the last feature map is 1x1: batch norm needs two samples
        epoch_samples=50_000,  # CIFAR-10 training set
        dataset="CIFAR-10 shaped, synthetic",
    ),
)
