"""GPT-2 in Keras 3, the same layers and initialisation as torch.py. Attention is
Keras's MultiHeadAttention with a causal mask (fused where the backend has a kernel)."""

import keras
from keras import layers, ops

from bench.workloads._keras import adamw as optimizer  # as the PyTorch side trains it
from bench.workloads._keras import loss
from bench.workloads._numpy import next_token_batch as make_batch
from bench.workloads.gpt2 import CONTEXT, SIZES, Size

__all__ = ["build_model", "loss", "make_batch", "optimizer"]

_EPS = 1e-5


def _init():
    return keras.initializers.RandomNormal(stddev=0.02)  # GPT-2's; biases start at zero


class Block(layers.Layer):
    def __init__(self, size: Size, **kwargs) -> None:
        super().__init__(**kwargs)
        self.attention_norm = layers.LayerNormalization(epsilon=_EPS)
        self.attention = layers.MultiHeadAttention(
            size.heads, size.hidden // size.heads, dropout=0.1, kernel_initializer=_init()
        )
        self.mlp_norm = layers.LayerNormalization(epsilon=_EPS)
        self.mlp_in = layers.Dense(4 * size.hidden, kernel_initializer=_init())
        self.mlp_out = layers.Dense(size.hidden, kernel_initializer=_init())
        self.dropout = layers.Dropout(0.1)

    def call(self, x, training=False):
        h = self.attention_norm(x)
        attended = self.attention(h, h, use_causal_mask=True, training=training)
        x = x + self.dropout(attended, training=training)
        h = self.mlp_in(self.mlp_norm(x))
        h = self.mlp_out(keras.activations.gelu(h, approximate=True))  # GPT-2's tanh form
        return x + self.dropout(h, training=training)


class GPT2(keras.Model):
    def __init__(self, vocab: int, size: Size, **kwargs) -> None:
        super().__init__(**kwargs)
        self.words = layers.Embedding(vocab, size.hidden, embeddings_initializer=_init())
        self.positions = layers.Embedding(CONTEXT, size.hidden, embeddings_initializer=_init())
        self.dropout = layers.Dropout(0.1)
        self.blocks = [Block(size) for _ in range(size.layers)]
        self.norm = layers.LayerNormalization(epsilon=_EPS)

    def call(self, tokens, training=False):
        positions = ops.arange(ops.shape(tokens)[1])
        x = self.words(tokens) + ops.expand_dims(self.positions(positions), 0)
        x = self.dropout(x, training=training)
        for block in self.blocks:
            x = block(x, training=training)
        x = self.norm(x)
        # The output layer is the word embedding, transposed (tied).
        return ops.matmul(x, ops.transpose(ops.cast(self.words.embeddings, x.dtype)))


def build_model(spec, point) -> keras.Model:
    model = GPT2(spec.num_classes, SIZES[spec.name])
    model(ops.zeros((1, spec.input_shape(point.seq_len)[0]), dtype="int32"))  # create weights
    return model
