"""Shared TensorFlow (Keras 3) pieces for workload implementations (not a workload).

A workload's tensorflow.py provides the same three functions as its torch.py:
  build_model(spec, point) -> keras.Model (NHWC images; logits out)
  make_batch(spec, point, batch_size, seed) -> (inputs, targets) as NumPy arrays
  loss(logits, targets) -> scalar mean loss over this replica's samples
A workload that trains with its own optimiser (SGD with momentum otherwise) provides:
  optimizer() -> (keras optimizer, how it reads in a result: "AdamW(...)")
"""

from __future__ import annotations

import keras

from bench.workloads import _optim
from bench.workloads._numpy import image_batch as make_batch

__all__ = ["loss", "make_batch"]


def adamw():
    """The decoders' AdamW (bench.workloads._optim) in Keras, and how it reads in a result."""
    optimizer = keras.optimizers.AdamW(learning_rate=_optim.LR, beta_1=_optim.BETAS[0],
                                       beta_2=_optim.BETAS[1], epsilon=_optim.EPS,
                                       weight_decay=_optim.WEIGHT_DECAY)  # fmt: skip
    return optimizer, _optim.label()


def loss(logits, targets):
    return keras.ops.mean(
        keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
    )


def resnet50(spec, point) -> keras.Model:
    """Keras' ResNet50 (its convolutions have biases: 0.1% more parameters than torchvision's)."""
    channels, height, width = spec.sample_shape
    return keras.applications.ResNet50(
        weights=None,  # nothing downloaded
        input_shape=(height, width, channels),
        classes=spec.num_classes,
        classifier_activation=None,  # logits: the loss applies the softmax
    )
