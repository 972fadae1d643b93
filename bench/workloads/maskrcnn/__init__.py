"""maskrcnn: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this
one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="maskrcnn",
        description=(
            "Mask R-CNN ResNet-50-FPN (torchvision) on COCO-shaped 800x1333 images, "
            "each with synthetic boxes and masks"
        ),
        task=Task.INSTANCE_SEGMENTATION,
        parameter_count=44_454_513,  # torchvision's, from scratch (batch norm trains)
        num_classes=91,  # COCO's category ids, background included, as torchvision
        sample_shape=(3, 800, 1333),
        default_batch_size=2,
        epoch_samples=118_287,  # COCO 2017 train
        dataset="synthetic COCO-shaped images, boxes and masks",
    ),
)

OBJECTS = 8  # objects per image: a typical COCO image holds about seven
