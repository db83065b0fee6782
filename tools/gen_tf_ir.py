"""Generates the TensorFlow OpenVINO IR fixtures of tests/data/tf_ir/ (issue 43: lower then raise
must leave TensorFlow models as they were).

Each fixture is a Keras model or a `tf.function` converted with `openvino.convert_model` (the TF
frontend keeps TensorFlow's StridedSlice masks as StridedSlice-1 attributes) and saved with
`openvino.save_model(..., compress_to_fp16=False)`. They cover every mask kind (begin, end,
ellipsis, new_axis, shrink), negative strides, a run-time begin, a `while_loop` (OpenVINO Loop)
with slices in its body, a GPT-style decoder step with a past, and LSTM/GRU layers; dims are
dynamic (None) unless the name says `static`.

Run with the TensorFlow venv (tensorflow-cpu 2.21, openvino 2026.4 measured):
    /work/venv-tf/bin/python tools/gen_tf_ir.py [--out tests/data/tf_ir]
Weights come from a fixed seed; the files are small (a few hundred KB in all).
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import tensorflow as tf  # noqa: E402

F32 = tf.float32


def spec(shape, dtype=F32, name=None):
    return tf.TensorSpec(shape, dtype, name=name)


def idioms():
    """The slicing idioms of real TF code, on dims of unknown size."""

    @tf.function(input_signature=[spec([None, None, 8], name="x")])
    def f(x):
        last = x[:, -1]  # shrink -1
        first = x[:, 0]  # shrink 0
        chan0 = x[..., 0]  # ellipsis + shrink
        last_na = x[:, -1, tf.newaxis]  # shrink + new axis
        mid = x[:, 1:-1]  # begin and end
        rev = x[:, ::-1]  # negative stride, masks
        rev2 = x[:, -2::-2, 2:]  # negative stride from a negative begin
        head = x[..., :4]  # ellipsis + end
        na = x[tf.newaxis, :, 3]  # new axis first
        tail = x[:, -3:]  # negative begin, end mask
        return (
            last + first + tf.reduce_sum(chan0, axis=1, keepdims=True),
            last_na,
            mid,
            rev,
            rev2,
            head,
            na,
            tail,
        )

    return f


def idioms_static():
    """The same idioms on a static shape (every dim known)."""

    @tf.function(input_signature=[spec([2, 6, 8], name="x")])
    def f(x):
        return (
            x[:, -1] * 2.0,
            x[..., 0],
            x[:, -1, tf.newaxis],
            x[:, ::-2],
            x[1:, -3::-1, tf.newaxis, 1:7:3],
            x[tf.newaxis, ..., 5],
        )

    return f


def runtime_begin():
    """`x[:, i]` and `x[:, i:i+2]`, `x[i]` with a run-time `i`."""

    @tf.function(input_signature=[spec([None, None, 4], name="x"), spec([], tf.int32, name="i")])
    def f(x, i):
        return x[:, i], x[:, i : i + 2], x[i, ..., 1], x[:, -i - 1 :: -1]

    return f


def while_loop():
    """A while_loop (OpenVINO Loop) with slices in its body: column `i` and the last row."""

    @tf.function(input_signature=[spec([None, 5, 3], name="x")])
    def f(x):
        n = tf.shape(x)[1]
        acc0 = tf.zeros_like(x[:, 0])

        def body(i, acc):
            col = x[:, i]
            last = x[:, -1]
            # (no x[:, -1, tf.newaxis] here: OpenVINO CPU 2026.4 reads uninitialised memory for
            # a shrink + new axis StridedSlice, which would leave nothing to compare outputs with)
            return i + 1, acc + col * tf.reduce_sum(last, axis=-1, keepdims=True) + x[..., 0][:, :1]

        _, acc = tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), acc0])
        return acc

    return f


class Decoder(tf.keras.layers.Layer):
    """A GPT-style decoder step with a key/value past: attention over past + current, the
    last position's logits (`h[:, -1]`), and the new past."""

    def __init__(self, d=16, heads=2, vocab=32):
        super().__init__()
        self.d, self.h, self.vocab = d, heads, vocab
        self.emb = tf.keras.layers.Embedding(vocab, d)
        self.qkv = tf.keras.layers.Dense(3 * d)
        self.out = tf.keras.layers.Dense(d)
        self.head = tf.keras.layers.Dense(vocab)

    def call(self, ids, past):
        x = self.emb(ids)  # [b, t, d]
        qkv = self.qkv(x)
        d, h = self.d, self.h
        q, k, v = qkv[..., :d], qkv[..., d : 2 * d], qkv[..., 2 * d :]

        def split(t):
            b = tf.shape(t)[0]
            return tf.transpose(tf.reshape(t, [b, -1, h, d // h]), [0, 2, 1, 3])

        q, k, v = split(q), split(k), split(v)
        k = tf.concat([past[0], k], axis=2)
        v = tf.concat([past[1], v], axis=2)
        att = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / np.sqrt(d // h), axis=-1)
        y = tf.matmul(att, v)
        b = tf.shape(y)[0]
        y = tf.reshape(tf.transpose(y, [0, 2, 1, 3]), [b, -1, d])
        y = self.out(y) + x
        logits = self.head(y[:, -1])  # the last position
        return logits, tf.stack([k, v])[:, :, :, -8:]  # past window: the last 8 positions


def decoder():
    tf.keras.utils.set_random_seed(0)
    layer = Decoder()

    @tf.function(
        input_signature=[
            spec([None, None], tf.int32, name="ids"),
            spec([2, None, 2, None, 8], name="past"),
        ]
    )
    def f(ids, past):
        return layer(ids, past)

    return f


def rnn(kind):
    tf.keras.utils.set_random_seed(1)
    cell = tf.keras.layers.LSTM if kind == "lstm" else tf.keras.layers.GRU
    inp = tf.keras.Input(shape=(None, 6), name="x")
    y = cell(8, return_sequences=True)(inp)
    y = y[:, -1] + y[:, 0]
    y = tf.keras.layers.Dense(4)(y)
    return tf.keras.Model(inp, y)


def idioms_more():
    """More mask combinations: strides, reverse ranges, several new axes, shrink of -2, a
    static batch with dynamic length."""

    @tf.function(input_signature=[spec([3, None, 6], name="x")])
    def f(x):
        return (
            x[:, ::2],
            x[..., ::-1],
            x[:, tf.newaxis, :, tf.newaxis, 2],
            x[-2],
            x[::-1, 1:, -1],
            x[1:2, ..., -4:-1:2],
            x[:, -1:-4:-1, ::3],
            x[tf.newaxis, 1, ..., tf.newaxis],
        )

    return f


def runtime_more():
    """Run-time begin and end on several axes, with a stride, and a run-time shrink next to a
    new axis."""

    @tf.function(
        input_signature=[spec([None, None, 6], name="x"), spec([], tf.int32, name="i"), spec([], tf.int32, name="j")]
    )
    def f(x, i, j):
        return x[i:, :j], x[:, i, tf.newaxis, ::2], x[..., j], x[i : i + 1, -1]

    return f


def encoder():
    """A BERT-style encoder layer (Keras MultiHeadAttention) and the CLS token `h[:, 0]`."""
    tf.keras.utils.set_random_seed(2)
    inp = tf.keras.Input(shape=(None, 16), name="x")
    att = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(inp, inp)
    h = tf.keras.layers.LayerNormalization()(inp + att)
    h = h + tf.keras.layers.Dense(16)(tf.keras.layers.Dense(32, activation="gelu")(h))
    cls = h[:, 0]
    return tf.keras.Model(inp, [tf.keras.layers.Dense(3)(cls), h[:, 1:]])


def bilstm():
    tf.keras.utils.set_random_seed(3)
    inp = tf.keras.Input(shape=(None, 5), name="x")
    y = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4, return_sequences=True))(inp)
    return tf.keras.Model(inp, [y[:, -1, :4], y[:, 0, 4:]])


FIXTURES = {
    "idioms_more": (idioms_more, None),
    "runtime_more": (runtime_more, None),
    "encoder": (encoder, None),
    "bilstm": (bilstm, None),
    "idioms": (idioms, None),
    "idioms_static": (idioms_static, None),
    "runtime_begin": (runtime_begin, None),
    "while_loop": (while_loop, None),
    "decoder_past": (decoder, None),
    "lstm": (lambda: rnn("lstm"), None),
    "gru": (lambda: rnn("gru"), None),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("tests", "data", "tf_ir"))
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = [s for s in args.only.split(",") if s]
    for name, (make, _) in FIXTURES.items():
        if only and name not in only:
            continue
        tf.keras.utils.set_random_seed(0)
        model = make()
        m = ov.convert_model(model)
        path = os.path.join(args.out, name + ".xml")
        ov.save_model(m, path, compress_to_fp16=False)
        ops = [o.get_type_name() for o in m.get_ordered_ops()]
        print(f"{name}: {len(ops)} ops, {ops.count('StridedSlice')} StridedSlice -> {path}")


if __name__ == "__main__":
    main()
