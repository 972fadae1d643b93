"""resnet50: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this
one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="resnet50",
        description=(
            "ResNet-50 on ImageNet-shaped images (TPUv2 vs V100, Xeon CPU studies), "
            "SGD with momentum"
        ),
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=25_557_032,  # torchvision's ResNet-50
        sample_shape=(3, 224, 224),
        num_classes=1000,
        default_batch_size=32,
        epoch_samples=1_281_167,  # ImageNet-1k training set
        dataset="ImageNet-1k shaped, synthetic",
    ),
)
