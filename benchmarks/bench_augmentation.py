"""Cost of image augmentation relative to a training step of a CIFAR-shaped CNN.

    python benchmarks/bench_augmentation.py [--threads 2] [--batch 64] [--repeat 30]

Same process, same thread count, medians, interleaved: one ``train_on_batch`` step of the
benchmark CNN on a (batch, 32, 32, 3)-shaped batch (Conv(16,3,same)-BN-ReLU-MaxPool2-
Conv(32,3,same)-BN-ReLU-MaxPool2-Flatten-Dropout(0.25)-Dense(10), Adam, cross-entropy from
logits), and ``RandomFlip`` + ``RandomTranslation(0.1, 0.1)`` + ``RandomRotation(0.1)``
applied to the same batch in training mode (bilinear, reflect fill). Reports each median in
ms and the ratio augmentation / step, plus the same augmentation in torchvision-free PyTorch
terms is not attempted (PyTorch has no built-in equivalent). The layout is channels_first
(``mn.config.set_image_data_format("channels_first")``) so the CNN runs the layout every
branch of minnet has; the augmentation kernels serve both layouts with the same code.
JSON -> benchmarks/results/augmentation_t<threads>.json
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _common import median_ms, write_results  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    import minnet as mn
    from minnet import layers, optimizers

    mn.set_num_threads(args.threads)
    mn.config.set_image_data_format("channels_first")
    mn.manual_seed(0)
    model = mn.Sequential([
        layers.Conv2D(16, 3, padding="same"), layers.BatchNormalization(), layers.ReLU(),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same"), layers.BatchNormalization(), layers.ReLU(),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dropout(0.25), layers.Dense(10)])
    model.compile(optimizer=optimizers.Adam(learning_rate=1e-3),
                  loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    augment = [layers.RandomFlip("horizontal"), layers.RandomTranslation(0.1, 0.1),
               layers.RandomRotation(0.1)]
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (args.batch, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, args.batch).astype(np.int64)

    def step():
        model.train_on_batch(x, y)

    def aug():
        h = x
        for layer in augment:
            h = layer(h, training=True)
        return h

    step_ms, aug_ms = [], []
    for _ in range(3):                       # interleaved rounds; the median of each round
        step_ms.append(median_ms(step, args.repeat // 3 or 1, warmup=2))
        aug_ms.append(median_ms(aug, args.repeat // 3 or 1, warmup=2))
    step_med, aug_med = float(np.median(step_ms)), float(np.median(aug_ms))
    parts = {type(layer).__name__: median_ms(lambda layer=layer: layer(x, training=True),
                                             args.repeat, warmup=2) for layer in augment}
    rows = [{"batch": args.batch, "threads": args.threads, "train_step_ms": step_med,
             "augmentation_ms": aug_med, "ratio": aug_med / step_med,
             "per_layer_ms": parts}]
    print(f"threads={args.threads} batch={args.batch}: train step {step_med:.2f} ms, "
          f"flip+translate+rotate {aug_med:.2f} ms, ratio {aug_med / step_med:.3f}")
    for name, ms in parts.items():
        print(f"  {name}: {ms:.2f} ms")
    write_results(f"augmentation_t{args.threads}.json", "augmentation vs CNN train step", rows)


if __name__ == "__main__":
    main()
