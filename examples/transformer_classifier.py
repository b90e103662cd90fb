"""A Transformer text classifier in the style of Keras's example "Text classification with
Transformer" (keras.io/examples/nlp/text_classification_with_transformer), then moved to
PyTorch with ``minnet.interop``.

The task: which play does a passage of 32 words come from, *Coriolanus* or *Richard III*?
Both are in the public-domain Shakespeare text that ships with minnet
(``mn.datasets.shakespeare``); passages are cut from the two plays, the last fifth of each
play held out for testing. The model is the Keras example's, written the same way:
``TokenAndPositionEmbedding`` and ``TransformerBlock`` by subclassing (``call`` without
``training``, ``ops.arange`` for the positions), a functional model around them,
``compile``/``fit``. One change: ``key_dim=embed_dim // num_heads`` (the example uses
``key_dim=embed_dim``), so that ``torch.nn.MultiheadAttention`` has a twin.

Then (when torch is installed) the trained model is rebuilt as a ``torch.nn.Module`` from
minnet's own converters (``interop.mha_to_torch`` for the attention, ``interop.to_torch``
for the Sequential parts) and both frameworks' predictions are compared.

Run:  python examples/transformer_classifier.py [--epochs 3] [--quick]
"""
import argparse
import re
import time

import numpy as np

import minnet as mn
from minnet import interop, layers, ops

MAXLEN = 32          # words per passage
VOCAB = 3000         # most frequent words kept; the rest map to one "unknown" id
EMBED, HEADS, FF = 32, 2, 32


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim // num_heads)
        self.ffn = mn.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output)
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions


def passages(quick):
    """(x_train, y_train), (x_test, y_test): word ids (N, MAXLEN) and the play (0 or 1)."""
    text = mn.datasets.shakespeare.load_data()
    split = text.index("\nGLOUCESTER:\nNow is the winter")       # Richard III begins here
    plays = [re.findall(r"[a-z']+", part.lower()) for part in (text[:split], text[split:])]
    counts = {}
    for words in plays:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    ids = {w: i + 2 for i, w in enumerate(sorted(counts, key=lambda w: (-counts[w], w))[:VOCAB - 2])}
    train, test = ([], []), ([], [])
    for label, words in enumerate(plays):
        tokens = np.array([ids.get(w, 1) for w in words], dtype=np.int64)
        cut = int(len(tokens) * 0.8)
        for part, (xs, ys), step in ((tokens[:cut], train, MAXLEN // 2), (tokens[cut:], test, MAXLEN)):
            for start in range(0, len(part) - MAXLEN, step):
                xs.append(part[start:start + MAXLEN])
                ys.append(label)
    (x_train, y_train), (x_test, y_test) = ((np.stack(x), np.array(y)) for x, y in (train, test))
    if quick:
        x_train, y_train = x_train[::10], y_train[::10]
    return (x_train, y_train), (x_test, y_test)


def build_model():
    inputs = layers.Input(shape=(MAXLEN,), dtype="int32")
    x = TokenAndPositionEmbedding(MAXLEN, VOCAB, EMBED)(inputs)
    x = TransformerBlock(EMBED, HEADS, FF)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return mn.Model(inputs=inputs, outputs=outputs)


def to_torch(model):
    """The trained model as a torch.nn.Module, built from minnet's converters."""
    import torch

    embed = next(l for l in model.layers if isinstance(l, TokenAndPositionEmbedding))
    block = next(l for l in model.layers if isinstance(l, TransformerBlock))
    head = mn.Sequential([layers.Input((MAXLEN, EMBED))] + model.layers[-5:])

    def one(layer, shape):                      # a single layer through interop.to_torch
        return interop.to_torch(mn.Sequential([layers.Input(shape), layer]))

    class TorchClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.token_emb = one(embed.token_emb, (MAXLEN,))
            self.pos_emb = one(embed.pos_emb, (MAXLEN,))
            self.att = interop.mha_to_torch(block.att)
            self.ffn = interop.to_torch(block.ffn)
            self.layernorm1 = one(block.layernorm1, (MAXLEN, EMBED))
            self.layernorm2 = one(block.layernorm2, (MAXLEN, EMBED))
            self.head = interop.to_torch(head)

        def forward(self, ids):
            x = self.token_emb(ids) + self.pos_emb(torch.arange(ids.shape[-1]))
            out1 = self.layernorm1(x + self.att(x, x, x, need_weights=False)[0])
            return self.head(self.layernorm2(out1 + self.ffn(out1)))

    return TorchClassifier().eval()


def main(epochs=3, quick=False):
    (x_train, y_train), (x_test, y_test) = passages(quick)
    print(f"{len(x_train)} training and {len(x_test)} test passages of {MAXLEN} words "
          f"(Coriolanus 0, Richard III 1; {y_train.mean():.0%} of training passages are 1)")
    mn.manual_seed(0)
    model = build_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    started = time.perf_counter()
    model.fit(x_train, y_train, batch_size=32, epochs=1 if quick else epochs,
              validation_data=(x_test, y_test), verbose=2)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy {accuracy:.3f} (loss {loss:.3f}) after "
          f"{time.perf_counter() - started:.0f} s")
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the move to PyTorch (pip install torch)")
        return model
    module = to_torch(model)
    with torch.no_grad():
        theirs = module(torch.from_numpy(x_test)).numpy()
    ours = model.predict(x_test, verbose=0)
    print(f"PyTorch twin: max |difference| of the test probabilities {np.abs(ours - theirs).max():.2e}, "
          f"same predicted play for {np.mean(ours.argmax(1) == theirs.argmax(1)):.1%} of passages")
    return model


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--quick", "--short", action="store_true", dest="quick",
                        help="one epoch on a tenth of the passages (smoke test)")
    args = parser.parse_args()
    main(args.epochs, args.quick)
