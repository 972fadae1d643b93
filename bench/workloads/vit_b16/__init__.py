"""vit-b16: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this
one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="vit-b16",
        description="ViT-B/16 (torchvision): 12 layers, hidden 768, 16x16 patches, ImageNet at 224",
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=86_567_656,  # torchvision's ViT-B/16
        num_classes=1000,
        sample_shape=(3, 224, 224),
        default_batch_size=64,
        epoch_samples=1_281_167,  # the ImageNet-1k training set
        dataset="synthetic ImageNet-shaped images",
    ),
)

# ViT-B/16 (Dosovitskiy et al. 2021), as torchvision builds it: pre-LN encoder layers,
# a class token, learned positions, no dropout.
PATCH, HIDDEN, LAYERS, HEADS, MLP, EPS = 16, 768, 12, 12, 3072, 1e-6
