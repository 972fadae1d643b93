"""ViT-B/16 in Keras 3, layer for layer torchvision's (the same parameter count)."""

import keras
from keras import layers, ops

from bench.workloads._keras import loss, make_batch
from bench.workloads.vit_b16 import EPS, HEADS, HIDDEN, LAYERS, MLP, PATCH

__all__ = ["build_model", "loss", "make_batch"]


class EncoderLayer(layers.Layer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.attention_norm = layers.LayerNormalization(epsilon=EPS)
        self.attention = layers.MultiHeadAttention(HEADS, HIDDEN // HEADS)
        self.mlp_norm = layers.LayerNormalization(epsilon=EPS)
        self.mlp_in = layers.Dense(MLP, activation="gelu")
        self.mlp_out = layers.Dense(HIDDEN)

    def call(self, x):
        h = self.attention_norm(x)
        x = x + self.attention(h, h)
        return x + self.mlp_out(self.mlp_in(self.mlp_norm(x)))


class VisionTransformer(keras.Model):
    def __init__(self, classes: int, patches: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.patchify = layers.Conv2D(HIDDEN, PATCH, strides=PATCH)
        self.class_token = self.add_weight(shape=(1, 1, HIDDEN), initializer="zeros")
        self.positions = self.add_weight(
            shape=(1, patches + 1, HIDDEN),
            initializer=keras.initializers.RandomNormal(stddev=0.02),
        )
        self.encoder = [EncoderLayer() for _ in range(LAYERS)]
        self.norm = layers.LayerNormalization(epsilon=EPS)
        self.head = layers.Dense(classes)

    def call(self, images):
        x = self.patchify(images)
        x = ops.reshape(x, (ops.shape(x)[0], -1, HIDDEN))
        token = ops.cast(ops.broadcast_to(self.class_token, (ops.shape(x)[0], 1, HIDDEN)), x.dtype)
        x = ops.concatenate([token, x], axis=1) + ops.cast(self.positions, x.dtype)
        for layer in self.encoder:
            x = layer(x)
        return self.head(self.norm(x)[:, 0])


def build_model(spec, point) -> keras.Model:
    channels, height, width = spec.sample_shape
    model = VisionTransformer(spec.num_classes, (height // PATCH) * (width // PATCH))
    model(ops.zeros((1, height, width, channels)))  # create the weights
    return model
