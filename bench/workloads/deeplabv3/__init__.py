"""deeplabv3: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this
one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="deeplabv3",
        description=(
            "DeepLabV3-ResNet-50 (torchvision) on Cityscapes-shaped 769x769 crops, the "
            "DeepLabv3 paper's Cityscapes crop, 19 classes"
        ),
        task=Task.SEMANTIC_SEGMENTATION,
        parameter_count=39_638_355,  # torchvision's, 19 classes, no auxiliary head
        num_classes=19,  # Cityscapes' evaluated classes
        sample_shape=(3, 769, 769),
        default_batch_size=8,
        min_batch_size=2,  # batch norm after global pooling sees one value per sample
        per_sample_unit="pixels",
        epoch_samples=2_975,  # Cityscapes' fine training set
        dataset="synthetic Cityscapes-shaped images and label maps",
    ),
)

IGNORE = 255  # Cityscapes' label for pixels not scored
