"""BERT (base or large) for masked-token training in Keras 3, the same layers as torch.py."""

import keras
from keras import layers, ops

from bench.workloads._numpy import IGNORE, masked_token_batch
from bench.workloads.bert import MASK_FRACTION, MASK_TOKEN, MAX_POSITIONS, SIZES, Size

_EPS = 1e-12  # BERT's layer-norm epsilon


class EncoderLayer(layers.Layer):
    """Post-LN transformer layer, as BERT and torch.nn.TransformerEncoderLayer."""

    def __init__(self, size: Size, **kwargs) -> None:
        super().__init__(**kwargs)
        self.attention = layers.MultiHeadAttention(
            size.heads, size.hidden // size.heads, dropout=0.1
        )
        self.attention_norm = layers.LayerNormalization(epsilon=_EPS)
        self.ffn_in = layers.Dense(size.ffn, activation="gelu")
        self.ffn_out = layers.Dense(size.hidden)
        self.ffn_norm = layers.LayerNormalization(epsilon=_EPS)
        self.dropout = layers.Dropout(0.1)

    def call(self, x, training=False):
        attended = self.attention(x, x, training=training)
        x = self.attention_norm(x + self.dropout(attended, training=training))
        hidden = self.ffn_out(self.ffn_in(x))
        return self.ffn_norm(x + self.dropout(hidden, training=training))


class BertForMaskedLM(keras.Model):
    def __init__(self, vocab: int, size: Size, **kwargs) -> None:
        super().__init__(**kwargs)
        self.words = layers.Embedding(vocab, size.hidden)
        self.positions = layers.Embedding(MAX_POSITIONS, size.hidden)
        self.segments = layers.Embedding(2, size.hidden)
        self.embed_norm = layers.LayerNormalization(epsilon=_EPS)
        self.dropout = layers.Dropout(0.1)
        self.encoder = [EncoderLayer(size) for _ in range(size.layers)]
        self.head = layers.Dense(size.hidden, activation="gelu")
        self.head_norm = layers.LayerNormalization(epsilon=_EPS)
        self.vocab = vocab

    def build(self, input_shape) -> None:
        # The output projection is the word embedding, transposed (tied, as BERT);
        # only its bias is a parameter of its own.
        self.decoder_bias = self.add_weight(shape=(self.vocab,), initializer="zeros", name="bias")
        super().build(input_shape)

    def call(self, tokens, training=False):
        positions = ops.arange(ops.shape(tokens)[1])
        x = (
            self.words(tokens)
            + ops.expand_dims(self.positions(positions), 0)
            + self.segments(ops.zeros_like(tokens))
        )
        x = self.dropout(self.embed_norm(x), training=training)
        for layer in self.encoder:
            x = layer(x, training=training)
        x = self.head_norm(self.head(x))
        embeddings = ops.cast(self.words.embeddings, x.dtype)
        return ops.matmul(x, ops.transpose(embeddings)) + ops.cast(self.decoder_bias, x.dtype)


def build_model(spec, point) -> keras.Model:
    model = BertForMaskedLM(spec.num_classes, SIZES[spec.name])
    model(ops.zeros((1, spec.input_shape(point.seq_len)[0]), dtype="int32"))  # create weights
    return model


def make_batch(spec, point, batch_size: int, seed: int):
    return masked_token_batch(spec, point, batch_size, seed, MASK_TOKEN, MASK_FRACTION)


def loss(logits, targets):
    """Mean cross-entropy over the masked tokens only."""
    scored = ops.cast(ops.not_equal(targets, IGNORE), "float32")
    safe = ops.where(targets == IGNORE, 0, targets)
    per_token = keras.losses.sparse_categorical_crossentropy(safe, logits, from_logits=True)
    return ops.sum(per_token * scored) / ops.maximum(ops.sum(scored), 1.0)
