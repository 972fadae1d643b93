"""pix2pixhd: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside this
one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="pix2pixhd",
        description=(
            "pix2pixHD at 2048x1024 (Cityscapes label maps to photos): its global generator "
            "and two-scale discriminators, GAN + feature-matching losses"
        ),
        task=Task.IMAGE_TO_IMAGE,
        parameter_count=188_149_957,  # global generator 182.5 M + two discriminators 5.6 M
        num_classes=35,  # Cityscapes label ids, one-hot, plus an instance-edge channel
        sample_shape=(36, 1024, 2048),
        default_batch_size=1,
        per_sample_unit="pixels",
        epoch_samples=2_975,  # Cityscapes' fine training set
        dataset="synthetic Cityscapes-shaped label maps and photos",
    ),
)

# The paper's sizes (Wang et al. 2018, "High-Resolution Image Synthesis and Semantic
# Manipulation with Conditional GANs"; the options of its code for Cityscapes).
NGF, DOWNSAMPLE, BLOCKS = 64, 4, 9  # the global generator G1
NDF, D_LAYERS, D_SCALES = 64, 3, 2  # PatchGAN discriminators at full and half scale
FEATURE_MATCHING = 10.0  # lambda of the feature-matching loss
