"""A decoder-only character Transformer: token + position embeddings, causal MultiHeadAttention
blocks with LayerNormalization and residuals, trained on a text file, then sampled.

The model reads WINDOW characters and predicts the next one at every position; the causal
mask (``use_causal_mask=True``) keeps position i from seeing positions after it, so one
forward pass trains all WINDOW predictions. Each block is the pre-norm arrangement of GPT-2::

    h = x + MultiHeadAttention(LayerNorm(x), LayerNorm(x), use_causal_mask=True)
    y = h + Dense(width)(gelu(Dense(4 width)(LayerNorm(h))))

Run:  python examples/char_transformer.py [path/to/text.txt] [--steps 1500] [--quick]
With no file it trains on the public-domain Shakespeare text that ships with minnet
(``mn.datasets.shakespeare.load_data()``, 290 KB; its source is in docs/datasets.md).
--quick (or --short) trains for a few steps only (smoke test).
"""
import argparse
import pathlib
import time

import numpy as np

import minnet as mn
import minnet.functional as F
from minnet import layers, optimizers

WINDOW = 64
BATCH = 32
WIDTH = 64
HEADS = 4
BLOCKS = 2


def load_text(path):
    if path is not None:
        return pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
    return mn.datasets.shakespeare.load_data()


class TokenAndPosition(layers.Layer):
    """Token embedding plus a learned embedding of each position (Keras's GPT example)."""

    def __init__(self, vocab_size, length, width):
        super().__init__()
        self.tokens = layers.Embedding(vocab_size, width)
        self.length, self.width = length, width

    def build(self, input_shape):
        self.positions = self.add_weight("positions", (self.length, self.width),
                                         initializer="random_normal")

    def call(self, ids):
        steps = ids.shape[1]
        return self.tokens(ids) + self.positions[:steps]


class Block(layers.Layer):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = layers.LayerNormalization(epsilon=1e-5)
        self.attention = layers.MultiHeadAttention(num_heads=heads, key_dim=width // heads)
        self.norm2 = layers.LayerNormalization(epsilon=1e-5)
        self.up = layers.Dense(4 * width, activation="gelu")
        self.down = layers.Dense(width)

    def call(self, x):
        n = self.norm1(x)
        h = x + self.attention(n, n, use_causal_mask=True)
        return h + self.down(self.up(self.norm2(h)))


class CharTransformer(mn.Model):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = TokenAndPosition(vocab_size, WINDOW, WIDTH)
        self.blocks = [Block(WIDTH, HEADS) for _ in range(BLOCKS)]
        self.norm = layers.LayerNormalization(epsilon=1e-5)
        self.head = layers.Dense(vocab_size)

    def call(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def sample(model, ids_of, chars, prompt, length, temperature, rng):
    ids = [ids_of.get(c, 0) for c in prompt]
    start = len(ids)
    for _ in range(length):
        context = np.array([ids[-WINDOW:]])          # any length up to WINDOW (causal)
        with mn.no_grad():
            logits = model(context).numpy()[0, -1].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return prompt + "".join(chars[i] for i in ids[start:])


def main(path=None, steps=1500, quick=False):
    text = load_text(path)
    chars = sorted(set(text))
    ids_of = {c: i for i, c in enumerate(chars)}
    data = np.array([ids_of[c] for c in text], dtype=np.int64)
    steps = 5 if quick else steps
    print(f"{len(text):,} characters, {len(chars)} distinct; {steps} steps of {BATCH} windows "
          f"of {WINDOW}; {BLOCKS} blocks of width {WIDTH}, {HEADS} heads")
    mn.manual_seed(0)
    rng = np.random.default_rng(0)
    model = CharTransformer(len(chars))
    model(np.zeros((1, WINDOW), np.int64))          # build the weights before the optimizer sees them
    model.train()
    opt = optimizers.Adam(model.parameters(), learning_rate=2e-3)
    started = time.perf_counter()
    recent = []
    for step in range(1, steps + 1):
        starts = rng.integers(0, len(data) - WINDOW - 1, size=BATCH)
        x = np.stack([data[s:s + WINDOW] for s in starts])
        y = np.stack([data[s + 1:s + WINDOW + 1] for s in starts])
        opt.zero_grad()
        logits = model(x, training=True)
        loss = F.cross_entropy(logits.reshape(BATCH * WINDOW, len(chars)), y.reshape(-1))
        loss.backward()
        opt.step()
        recent = (recent + [float(loss.item())])[-50:]
        if step == 1 or step % max(1, steps // 10) == 0:
            print(f"step {step:5d}  loss {recent[-1]:.3f} nats/char  (mean of the last "
                  f"{len(recent)}: {np.mean(recent):.3f})  {time.perf_counter() - started:.0f} s")
    model.eval()
    print(f"trained {steps} steps in {time.perf_counter() - started:.0f} s; mean loss of the "
          f"last {len(recent)} steps {np.mean(recent):.3f} nats/char")
    print("--- sample (temperature 0.8) ---")
    print(sample(model, ids_of, chars, prompt="The ", length=60 if quick else 400,
                 temperature=0.8, rng=rng))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None, help="a UTF-8 text file")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--quick", "--short", action="store_true", dest="quick",
                        help="a few steps (smoke test)")
    args = parser.parse_args()
    main(args.path, args.steps, args.quick)
