"""pix2pixHD, written after the paper and its published code (no package provides it).

One training step is the paper's: the generator G turns a label map into a photo; the
multi-scale discriminators D score (label map, photo) pairs. G's loss is the least-squares
GAN loss of D on the fake plus feature matching between D's features of the real and the
fake photo; D's loss scores the real photo as real and the fake (detached) as fake. The
published code steps G's and D's optimisers on the losses of the same forward pass; here
one optimiser steps both at once on the sum, and D's weights are read detached on G's
side so G's loss trains only G, exactly as two optimisers would. Left out: the VGG
perceptual loss (it needs ImageNet weights; the code's --no_vgg_loss), the local
enhancer (the paper's 2048x1024 results add it to G1 for the last stage of training),
and instance-level feature encoding.
"""

import typing

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from bench.workloads.pix2pixhd import (
    BLOCKS,
    D_LAYERS,
    D_SCALES,
    DOWNSAMPLE,
    FEATURE_MATCHING,
    NDF,
    NGF,
)

PHOTO_CHANNELS = 3


def _norm(channels: int) -> nn.Module:
    return nn.InstanceNorm2d(channels, affine=False)


class _Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(channels, channels, 3),
            _norm(channels),
            nn.ReLU(True),
            nn.ReflectionPad2d(1),
            nn.Conv2d(channels, channels, 3),
            _norm(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


def global_generator(in_channels: int) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.ReflectionPad2d(3),
        nn.Conv2d(in_channels, NGF, 7),
        _norm(NGF),
        nn.ReLU(True),
    ]
    for i in range(DOWNSAMPLE):
        channels = NGF * 2**i
        layers += [nn.Conv2d(channels, channels * 2, 3, 2, 1), _norm(channels * 2), nn.ReLU(True)]
    layers += [_Residual(NGF * 2**DOWNSAMPLE) for _ in range(BLOCKS)]
    for i in range(DOWNSAMPLE, 0, -1):
        channels = NGF * 2**i
        layers += [
            nn.ConvTranspose2d(channels, channels // 2, 3, 2, 1, output_padding=1),
            _norm(channels // 2),
            nn.ReLU(True),
        ]
    layers += [nn.ReflectionPad2d(3), nn.Conv2d(NGF, PHOTO_CHANNELS, 7), nn.Tanh()]
    return nn.Sequential(*layers)


def patch_discriminator(in_channels: int) -> nn.ModuleList:
    """A 70x70 PatchGAN whose every stage's output is kept (for feature matching)."""
    stages: list[nn.Module] = [
        nn.Sequential(nn.Conv2d(in_channels, NDF, 4, 2, 2), nn.LeakyReLU(0.2, True))
    ]
    channels = NDF
    for i in range(1, D_LAYERS + 1):
        out = min(channels * 2, 512)
        stride = 2 if i < D_LAYERS else 1
        stages.append(
            nn.Sequential(
                nn.Conv2d(channels, out, 4, stride, 2), _norm(out), nn.LeakyReLU(0.2, True)
            )
        )
        channels = out
    stages.append(nn.Sequential(nn.Conv2d(channels, 1, 4, 1, 2)))
    return nn.ModuleList(stages)


class Pix2PixHD(nn.Module):
    def __init__(self, label_channels: int) -> None:
        super().__init__()
        self.generator = global_generator(label_channels)
        self.discriminators = nn.ModuleList(
            patch_discriminator(label_channels + PHOTO_CHANNELS) for _ in range(D_SCALES)
        )

    def _discriminate(self, pair: torch.Tensor, params=None) -> list[list[torch.Tensor]]:
        """Each scale's features, the last its patch scores; `params` read instead of
        the discriminators' own (detached, for G's loss)."""
        scales = []
        for scale, stages in enumerate(self.discriminators):
            features, x = [], pair
            for i, stage in enumerate(typing.cast(nn.ModuleList, stages)):
                if params is None:
                    x = stage(x)
                else:
                    prefix = f"discriminators.{scale}.{i}."
                    own = {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}
                    x = functional_call(stage, own, (x,))
                features.append(x)
            scales.append(features)
            pair = F.avg_pool2d(pair, 3, stride=2, padding=1, count_include_pad=False)
        return scales

    def forward(self, labels: torch.Tensor, photos: torch.Tensor) -> dict[str, torch.Tensor]:
        """The three passes of D of the published code: real and detached fake for D's
        loss, fake for G's (with D's weights detached)."""
        fake = self.generator(labels)
        d_real = self._discriminate(torch.cat([labels, photos], 1))
        d_fake = self._discriminate(torch.cat([labels, fake.detach()], 1))
        frozen = {
            name: p.detach() for name, p in self.named_parameters() if name.startswith("disc")
        }
        g_fake = self._discriminate(torch.cat([labels, fake], 1), frozen)

        def total(terms) -> torch.Tensor:
            return torch.stack(list(terms)).sum()

        d_loss = total(
            F.mse_loss(r[-1], torch.ones_like(r[-1])) + F.mse_loss(f[-1], torch.zeros_like(f[-1]))
            for r, f in zip(d_real, d_fake, strict=True)
        )
        g_gan = total(F.mse_loss(f[-1], torch.ones_like(f[-1])) for f in g_fake)
        g_features = total(
            F.l1_loss(fake_feature, real_feature.detach()) / (D_LAYERS + 1) / D_SCALES
            for fake_scale, real_scale in zip(g_fake, d_real, strict=True)
            for fake_feature, real_feature in zip(fake_scale[:-1], real_scale[:-1], strict=True)
        )
        return {
            "g_gan": g_gan,
            "g_feature_matching": FEATURE_MATCHING * g_features,
            "d": 0.5 * d_loss,
        }


def build_model(spec, point) -> nn.Module:
    return Pix2PixHD(spec.input_shape()[0])


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    """One-hot label maps with an instance-edge channel, and photos in [-1, 1]."""
    channels, height, width = spec.input_shape()
    # Blocky label maps (16x16-pixel regions), as segmentations are, not per-pixel noise.
    coarse = torch.randint(0, spec.num_classes, (batch_size, height // 16 + 1, width // 16 + 1),
                           generator=generator)  # fmt: skip
    ids = coarse.repeat_interleave(16, 1).repeat_interleave(16, 2)[:, :height, :width]
    one_hot = F.one_hot(ids, spec.num_classes).permute(0, 3, 1, 2).float()
    edges = torch.zeros((batch_size, channels - spec.num_classes, height, width))
    edges[..., 1:, :] += (ids[:, None, 1:, :] != ids[:, None, :-1, :]).float()
    edges[..., 1:] += (ids[:, None, :, 1:] != ids[:, None, :, :-1]).float()
    photos = torch.rand((batch_size, PHOTO_CHANNELS, height, width), generator=generator) * 2 - 1
    return torch.cat([one_hot, edges.clamp(max=1)], 1), photos


def optimizer(parameters) -> torch.optim.Optimizer:
    """The paper's Adam (lr 0.0002, beta1 0.5) for G and D alike."""
    return torch.optim.Adam(parameters, lr=2e-4, betas=(0.5, 0.999))


def train_loss(model, labels, photos):
    return sum(model(labels, photos).values())
