"""A character-level language model: Embedding -> LSTM -> Dense, trained on a text file, then sampled.

The model reads WINDOW characters and predicts, at every position, the next one
(return_sequences=True, a cross-entropy per step). Training is a PyTorch-style loop over
random windows of the text; sampling feeds the last WINDOW characters back in and draws
the next character from softmax(logits / temperature).

Run:  python examples/char_lm.py [path/to/text.txt] [--steps 2000] [--quick]
With no file it trains on minnet's own documentation (docs/*.md), which ships with the
source checkout. --quick (or --short) trains for a few steps only (smoke test).
"""
import argparse
import pathlib

import numpy as np

import minnet as mn
import minnet.functional as F
from minnet import layers, optimizers

WINDOW = 64
BATCH = 32


def load_text(path):
    if path is not None:
        return pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
    docs = pathlib.Path(__file__).resolve().parent.parent / "docs"
    files = sorted(docs.glob("*.md"))
    if not files:   # an installed copy without the docs: fall back to this script
        files = [pathlib.Path(__file__).resolve()]
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


def build(vocab_size):
    return mn.Sequential([layers.Embedding(vocab_size, 32),
                          layers.LSTM(128, return_sequences=True),
                          layers.Dense(vocab_size)])


def sample(model, ids_of, chars, prompt, length, temperature, rng):
    ids = [ids_of.get(c, 0) for c in prompt]
    pad = ids_of.get(" ", 0)
    ids = [pad] * max(0, WINDOW - len(ids)) + ids       # the model was built for WINDOW steps
    start = len(ids) - len(prompt)
    for _ in range(length):
        context = np.array([ids[-WINDOW:]])
        with mn.no_grad():
            logits = model(context).numpy()[0, -1].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return "".join(chars[i] for i in ids[start:])


def main(path=None, steps=2000, quick=False):
    text = load_text(path)
    chars = sorted(set(text))
    ids_of = {c: i for i, c in enumerate(chars)}
    data = np.array([ids_of[c] for c in text], dtype=np.int64)
    steps = 5 if quick else steps
    print(f"{len(text):,} characters, {len(chars)} distinct; {steps} steps of {BATCH} windows "
          f"of {WINDOW}")
    mn.manual_seed(0)
    rng = np.random.default_rng(0)
    model = build(len(chars))
    model(np.zeros((1, WINDOW), np.int64))          # build the weights before the optimizer sees them
    model.train()
    opt = optimizers.Adam(model.parameters(), learning_rate=3e-3)
    for step in range(1, steps + 1):
        starts = rng.integers(0, len(data) - WINDOW - 1, size=BATCH)
        x = np.stack([data[s:s + WINDOW] for s in starts])
        y = np.stack([data[s + 1:s + WINDOW + 1] for s in starts])
        opt.zero_grad()
        logits = model(x, training=True)
        loss = F.cross_entropy(logits.reshape(BATCH * WINDOW, len(chars)), y.reshape(-1))
        loss.backward()
        opt.step()
        if step == 1 or step % max(1, steps // 10) == 0:
            print(f"step {step:5d}  loss {float(loss.item()):.3f} nats/char")
    model.eval()
    print("--- sample (temperature 0.8) ---")
    print(sample(model, ids_of, chars, prompt="The ", length=80 if quick else 400,
                 temperature=0.8, rng=rng))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None, help="a UTF-8 text file")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--quick", "--short", action="store_true", dest="quick",
                        help="a few steps (smoke test)")
    args = parser.parse_args()
    main(args.path, args.steps, args.quick)
