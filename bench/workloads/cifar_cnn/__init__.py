"""Four plain CNNs on CIFAR-10 spanning the 0.12 M to 1.65 M parameters
of the M2 Max vs V100 CIFAR study.

cnn-s is TensorFlow's CNN tutorial network (conv 32-64-64, dense 64), which has exactly
that study's smallest count, 122,570. The others widen the same shape.
"""

import dataclasses

from bench.datasets import cifar10
from bench.workloads.base import Task, WorkloadSpec

# name -> (conv channels, dense units); read by torch.py (and later other frameworks).
ARCHITECTURES = {
    "cnn-s": ((32, 64, 64), 64),
    "cnn-m": ((32, 64, 128), 128),
    "cnn-l": ((64, 128, 128), 256),
    "cnn-xl": ((96, 192, 256), 256),
}
# As counted; cnn-s is the study's smallest exactly, cnn-xl within 1% of its largest.
PARAMETERS = {"cnn-s": 122_570, "cnn-m": 356_810, "cnn-l": 750_346, "cnn-xl": 1_662_794}
# CIFAR-10's recipe at a quarter of its learning rate: without batch norm these networks
# do not train at 0.4 per 256 samples (cnn-s stays at chance, measured), at 0.1 they do.
RECIPE = dataclasses.replace(cifar10.RECIPE, lr_per_256=0.1)

WORKLOADS = tuple(
    WorkloadSpec(
        name=name,
        description=(
            f"CNN conv {'-'.join(map(str, convs))}, dense {dense} on CIFAR-10 "
            "(M2 Max vs V100 study)"
        ),
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=PARAMETERS[name],
        sample_shape=(3, 32, 32),
        num_classes=10,
        default_batch_size=128,
        epoch_samples=50_000,
        dataset="CIFAR-10 shaped, synthetic",
        recipes={"cifar10": RECIPE},
    )
    for name, (convs, dense) in ARCHITECTURES.items()
)
