"""cnn-s, cnn-m, cnn-l and cnn-xl in TensorFlow (Keras): build_model, loss, make_batch
(bench.workloads.contract)."""

import keras
from keras import layers

from bench.workloads._keras import loss, make_batch
from bench.workloads.cifar_cnn import ARCHITECTURES

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> keras.Model:
    """TensorFlow's CNN tutorial network, widened per ARCHITECTURES (as torch.py)."""
    convs, dense = ARCHITECTURES[spec.name]
    channels, height, width = spec.sample_shape
    model = keras.Sequential([keras.Input((height, width, channels))])
    for i, out in enumerate(convs):
        model.add(layers.Conv2D(out, 3, activation="relu"))
        if i < len(convs) - 1:
            model.add(layers.MaxPooling2D(2))
    model.add(layers.Flatten())
    model.add(layers.Dense(dense, activation="relu"))
    model.add(layers.Dense(spec.num_classes))
    return model
