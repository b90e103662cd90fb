"""Tutorial-shaped data made from minnet's shipped digits, so no network is needed.

``digits28.npz``: MNIST-shaped, ``x_train (n, 28, 28) uint8`` 0..255 and ``y_train (n,) uint8``
(the 8x8 digits upscaled bilinearly to 28x28). ``digits32rgb.npz``: CIFAR-shaped, ``(n, 32, 32,
3) uint8``, each digit upscaled to 32x32 and painted in a random colour on a random
background (seeded). Both use ``load_digits``'s train/test split.

Both frameworks of ``benchmarks/keras_tutorial_parity.py`` read the same files.
"""
import pathlib
import sys

import numpy as np
from scipy import ndimage


def _digits():
    data = np.load(pathlib.Path(__file__).resolve().parents[2] / "minnet" / "datasets" / "data"
                   / "digits.npz")
    images, labels = data["images"], data["labels"]
    return images.astype(np.float64) / 16.0, labels.astype(np.uint8)


def _split(n, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    n_test = n // 5
    return perm[n_test:], perm[:n_test]


def make(out_dir):
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images, labels = _digits()
    train, test = _split(len(images))
    big = np.stack([ndimage.zoom(im, 28 / 8, order=1) for im in images]).clip(0, 1)
    gray = (big * 255).round().astype(np.uint8)
    np.savez(out_dir / "digits28.npz", x_train=gray[train], y_train=labels[train],
             x_test=gray[test], y_test=labels[test])
    rng = np.random.default_rng(1)
    rgb32 = np.stack([ndimage.zoom(im, 32 / 8, order=1) for im in images]).clip(0, 1)[..., None]
    fg = rng.uniform(0.5, 1.0, size=(len(images), 1, 1, 3))
    bg = rng.uniform(0.0, 0.4, size=(len(images), 1, 1, 3))
    noise = rng.normal(0, 0.03, size=(len(images), 32, 32, 3))
    colour = (rgb32 * fg + (1 - rgb32) * bg + noise).clip(0, 1)
    colour = (colour * 255).round().astype(np.uint8)
    np.savez(out_dir / "digits32rgb.npz", x_train=colour[train], y_train=labels[train],
             x_test=colour[test], y_test=labels[test])
    return out_dir


if __name__ == "__main__":
    print(make(sys.argv[1] if len(sys.argv) > 1 else "."))
