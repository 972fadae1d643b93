"""torchvision's Mask R-CNN ResNet-50-FPN, from scratch: all backbone layers train and
batch norm is not frozen (torchvision's choice without pretrained weights). In training
mode the model computes its own losses (RPN, box and mask heads): this workload sums them.
"""

import torch
import torchvision

from bench.workloads.maskrcnn import OBJECTS


class _Detector(torch.nn.Module):
    """Takes a batch of images and a dict of batched targets (boxes, labels, masks), as
    the framework moves them, and hands torchvision its lists of per-image targets."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor, targets: dict[str, torch.Tensor]):
        per_image = [
            {name: value[i] for name, value in targets.items()} for i in range(images.shape[0])
        ]
        return self.model(list(images), per_image)


def build_model(spec, point):
    _, height, width = spec.input_shape()
    return _Detector(
        torchvision.models.detection.maskrcnn_resnet50_fpn(
            weights=None,
            weights_backbone=None,
            num_classes=spec.num_classes,
            # The images are already of the size trained on: no resizing inside the model.
            min_size=min(height, width),
            max_size=max(height, width),
        )
    )


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    """Random images with OBJECTS boxes each (at least 32 pixels a side), a class per box
    and the box's filled rectangle as its mask."""
    _, height, width = spec.input_shape()
    images = torch.rand((batch_size, 3, height, width), generator=generator)
    corner = torch.rand((batch_size, OBJECTS, 2), generator=generator)
    size = 0.1 + 0.4 * torch.rand((batch_size, OBJECTS, 2), generator=generator)
    scale = torch.tensor([width - 33, height - 33])
    x0y0 = (corner * (1 - size) * scale).floor()
    x1y1 = x0y0 + 32 + (size * scale).floor()
    boxes = torch.cat([x0y0, x1y1], dim=-1)
    xs, ys = torch.arange(width), torch.arange(height)
    inside_x = (xs >= boxes[..., 0, None]) & (xs < boxes[..., 2, None])
    inside_y = (ys >= boxes[..., 1, None]) & (ys < boxes[..., 3, None])
    masks = (inside_y[..., :, None] & inside_x[..., None, :]).to(torch.uint8)
    labels = torch.randint(1, spec.num_classes, (batch_size, OBJECTS), generator=generator)
    return images, {"boxes": boxes, "labels": labels, "masks": masks}


def train_loss(model, images, targets):
    return sum(model(images, targets).values())
