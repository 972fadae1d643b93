"""tiny in TensorFlow (Keras): build_model, loss, make_batch (bench.workloads.contract)."""

import keras
from keras import layers

from bench.workloads._keras import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> keras.Model:
    channels, height, width = spec.sample_shape
    return keras.Sequential(
        [
            keras.Input((height, width, channels)),
            layers.Conv2D(8, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Flatten(),
            layers.Dense(spec.num_classes),
        ]
    )
