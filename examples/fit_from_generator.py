"""Training from data that does not sit in one array: a generator, a PyDataset, a DataLoader.

    python examples/fit_from_generator.py
    python examples/fit_from_generator.py --short

1. A Python generator that yields (x, y) batches for ever: fit needs steps_per_epoch.
2. A mn.utils.PyDataset (__len__ / __getitem__ / on_epoch_end), which reshuffles itself.
3. A PyTorch DataLoader when torch is installed (its tensors are converted; minnet does
   not import torch for it).
All three read their batches in a background thread while the previous step computes.
The generator run is checked against fit on the same batches as arrays: same weights.
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers


def make_model():
    mn.manual_seed(0)
    model = mn.Sequential([mn.Input((10,)), layers.Dense(32, activation="relu"), layers.Dense(3)])
    model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                  loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


class ShuffledBatches(mn.utils.PyDataset):
    def __init__(self, x, y, batch_size, seed=0):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.rng = np.random.default_rng(seed)
        self.order = np.arange(len(x))

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        rows = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        return self.x[rows], self.y[rows]

    def on_epoch_end(self):
        self.order = self.rng.permutation(len(self.x))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", "--quick", action="store_true", help="a few epochs (for CI)")
    args = parser.parse_args(argv)
    epochs = 2 if args.short else 10
    rng = np.random.default_rng(1)
    x = rng.standard_normal((640, 10)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 1).astype(np.int64)

    def batches():
        while True:                                   # infinite: steps_per_epoch says where epochs end
            for start in range(0, len(x), 64):
                yield x[start:start + 64], y[start:start + 64]

    from_generator = make_model()
    from_generator.fit(batches(), steps_per_epoch=10, epochs=epochs, verbose=2)
    from_arrays = make_model()
    from_arrays.fit(x, y, batch_size=64, epochs=epochs, shuffle=False, verbose=0)
    same = all(np.array_equal(a, b) for a, b in zip(from_generator.get_weights(), from_arrays.get_weights()))
    print(f"generator and arrays give identical weights: {same}")

    model = make_model()
    model.fit(ShuffledBatches(x, y, 64), epochs=epochs, verbose=2)
    print("PyDataset accuracy:", round(model.evaluate(x, y, verbose=0)[1], 3))

    try:
        import torch
    except ImportError:
        print("torch not installed: skipping the DataLoader part")
        return
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                                         batch_size=64, shuffle=True)
    model = make_model()
    model.fit(loader, epochs=epochs, verbose=2)
    print("DataLoader accuracy:", round(model.evaluate(x, y, verbose=0)[1], 3))


if __name__ == "__main__":
    main()
