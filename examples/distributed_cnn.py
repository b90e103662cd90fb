"""Train the digits CNN data-parallel over MPI: the same script as one process, plus two lines.

    python examples/distributed_cnn.py                     # one process
    mpiexec -n 2 python examples/distributed_cnn.py        # 2 ranks, each on half of every batch
    mpiexec -n 2 python examples/distributed_cnn.py --quick   # 1 epoch on a subset (CI)
    srun -n 8 python examples/distributed_cnn.py           # under SLURM (docs/distributed.md)

``batch_size`` is the global batch: with N ranks each trains on about B / N samples of it,
the gradients are summed over the ranks, and the run ends with the weights one process
with batch B would reach (docs/distributed.md). Only rank 0 prints and saves the model.
BatchNormalization(synchronized=True) normalises over the whole global batch. Without
mpiexec (or without mpi4py: ``pip install "minnet[mpi]"``) the script runs as one process.
"""
import argparse
import time

import minnet as mn
from minnet import layers, losses, optimizers
from minnet.datasets import load_digits


def build_model():
    """Conv-BN-ReLU-MaxPool, Conv-BN-ReLU, Flatten-Dropout-Dense: 8x8x1 -> 10 logits."""
    return mn.Sequential([
        layers.Input((8, 8, 1)),
        layers.Conv2D(16, 3, padding="same", use_bias=False),   # BN adds the shift
        layers.BatchNormalization(synchronized=True),      # statistics over every rank's samples
        layers.ReLU(),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", use_bias=False),
        layers.BatchNormalization(synchronized=True),
        layers.ReLU(),
        layers.Flatten(),
        layers.Dropout(0.3),                               # masks by global sample position
        layers.Dense(10),
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 epoch on 512 samples (for CI)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64, help="the global batch size")
    parser.add_argument("--threads", type=int, default=1, help="threads per rank")
    args = parser.parse_args(argv)

    # The two lines (a no-op without mpiexec):
    mn.distribution.initialize()
    mn.distribution.set_distribution(mn.distribution.DataParallel())
    strategy = mn.distribution.distribution()
    chief = strategy.is_chief

    mn.set_num_threads(args.threads)
    mn.manual_seed(0)              # every rank builds the same model; rank 0's weights win anyway
    (x_train, y_train), (x_test, y_test) = load_digits()
    epochs = args.epochs
    if args.quick:
        x_train, y_train, epochs = x_train[:512], y_train[:512], 1
    if chief:
        print(f"{strategy.num_processes} rank(s) {mn.distribution.list_devices()}, global batch "
              f"{args.batch_size} (~{args.batch_size // strategy.num_processes} per rank)")

    model = build_model()
    model.compile(optimizer=optimizers.Adam(learning_rate=3e-3),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=epochs,
                        validation_split=0.1, seed=0, verbose=2)
    seconds = time.perf_counter() - start
    test_loss, test_accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if chief:                      # every rank holds the same numbers; one prints them
        print(f"trained in {seconds:.1f} s; final loss {history.history['loss'][-1]:.4f}; "
              f"test accuracy {test_accuracy:.3f} (loss {test_loss:.4f})")
        model.save("distributed_cnn.minnet")
        print("saved distributed_cnn.minnet (rank 0 only)")


if __name__ == "__main__":
    main()
