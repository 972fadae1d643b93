"""The big Transformer in Keras 3, layer for layer torch.nn.Transformer as torch.py uses
it (the same parameter count): post-LN layers, ReLU feed-forward, a final layer norm on
each stack, one embedding shared by source, target and output layer."""

import keras
from keras import layers, ops

from bench.workloads._numpy import sinusoids
from bench.workloads._numpy import translation_batch as make_batch
from bench.workloads.transformer_big import (
    D_MODEL,
    DROPOUT,
    FFN,
    HEADS,
    LABEL_SMOOTHING,
    LAYERS,
    PAD,
)

__all__ = ["build_model", "loss", "make_batch"]

_EPS = 1e-5  # torch.nn.Transformer's layer-norm epsilon


class Layer(layers.Layer):
    """An encoder layer, or with `cross` a decoder layer (causal self-attention, then
    attention over the encoder's output)."""

    def __init__(self, cross: bool, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cross = cross
        self.attentions = [
            layers.MultiHeadAttention(HEADS, D_MODEL // HEADS, dropout=DROPOUT)
            for _ in range(2 if cross else 1)
        ]
        self.norms = [layers.LayerNormalization(epsilon=_EPS) for _ in range(3 if cross else 2)]
        self.ffn_in = layers.Dense(FFN, activation="relu")
        self.ffn_out = layers.Dense(D_MODEL)
        self.dropout = layers.Dropout(DROPOUT)

    def call(self, x, memory=None, training=False):
        def residual(norm, update):
            return norm(x + self.dropout(update, training=training))

        x = residual(
            self.norms[0],
            self.attentions[0](x, x, use_causal_mask=self.cross, training=training),
        )
        if self.cross:
            x = residual(self.norms[1], self.attentions[1](x, memory, training=training))
        hidden = self.ffn_out(self.dropout(self.ffn_in(x), training=training))
        return residual(self.norms[-1], hidden)


class TransformerBig(keras.Model):
    def __init__(self, vocab: int, max_len: int, **kwargs) -> None:
        super().__init__(**kwargs)
        # Scaled by sqrt(D_MODEL) on the way in, as torch.py initialises it.
        self.embedding = layers.Embedding(
            vocab, D_MODEL, embeddings_initializer=keras.initializers.RandomNormal(D_MODEL**-0.5)
        )
        self.positions = sinusoids(max_len, D_MODEL)
        self.dropout = layers.Dropout(DROPOUT)
        self.encoder = [Layer(cross=False) for _ in range(LAYERS)]
        self.decoder = [Layer(cross=True) for _ in range(LAYERS)]
        self.encoder_norm = layers.LayerNormalization(epsilon=_EPS)
        self.decoder_norm = layers.LayerNormalization(epsilon=_EPS)

    def _embed(self, tokens, training):
        scaled = self.embedding(tokens) * D_MODEL**0.5
        positions = ops.cast(self.positions[: tokens.shape[1]], scaled.dtype)
        return self.dropout(scaled + positions, training=training)

    def call(self, pair, training=False):
        source, target_in = pair[:, 0], pair[:, 1]
        memory = self._embed(source, training)
        for layer in self.encoder:
            memory = layer(memory, training=training)
        memory = self.encoder_norm(memory)
        x = self._embed(target_in, training)
        for layer in self.decoder:
            x = layer(x, memory, training=training)
        x = self.decoder_norm(x)
        return ops.matmul(x, ops.transpose(ops.cast(self.embedding.embeddings, x.dtype)))


def build_model(spec, point) -> keras.Model:
    model = TransformerBig(spec.num_classes, spec.max_seq_len)
    model(ops.zeros((1, 2, spec.input_shape(point.seq_len)[0]), dtype="int32"))  # create weights
    return model


def loss(logits, targets):
    """Label-smoothed cross-entropy (torch's: (1 - e) x the target's term + e x the mean
    over the vocabulary), averaged over the tokens that are not padding."""
    log_p = ops.log_softmax(logits, axis=-1)
    target_term = -ops.take_along_axis(log_p, ops.expand_dims(targets, -1), axis=-1)[..., 0]
    per_token = (1 - LABEL_SMOOTHING) * target_term - LABEL_SMOOTHING * ops.mean(log_p, axis=-1)
    scored = ops.cast(ops.not_equal(targets, PAD), "float32")
    return ops.sum(per_token * scored) / ops.maximum(ops.sum(scored), 1.0)
