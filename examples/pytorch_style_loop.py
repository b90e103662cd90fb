"""Train with an explicit PyTorch-style loop over minnet objects.

    python examples/pytorch_style_loop.py
    python examples/pytorch_style_loop.py --quick

No compile/fit: you write the loop, exactly as in PyTorch - zero the gradients, run
the model in training mode, compute the loss, backpropagate, step the optimizer. The
same Sequential model, optimizers and losses are used as in the Keras-style examples.
"""
import argparse

import minnet as mn
from minnet import layers, losses, optimizers
from minnet.datasets import load_digits


def accuracy(model, x, y, batch_size=256):
    """Fraction of correct predictions, in eval mode and without building a graph."""
    model.eval()
    correct = 0
    with mn.no_grad():
        for xb, yb in mn.data.batches(x, y, batch_size=batch_size):
            logits = model(xb)
            correct += int((logits.numpy().argmax(axis=1) == yb).sum())
    return correct / len(x)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 epoch on a subset (for CI)")
    args = parser.parse_args(argv)

    mn.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = load_digits()
    x_train = x_train.reshape(len(x_train), -1)          # (N, 64): an MLP on the pixels
    x_test = x_test.reshape(len(x_test), -1)
    epochs = 15
    if args.quick:
        x_train, y_train, epochs = x_train[:256], y_train[:256], 1

    model = mn.Sequential([layers.Dense(128, activation="relu"), layers.Dropout(0.2), layers.Dense(10)])
    model.build((None, 64))
    opt = optimizers.SGD(model.parameters(), learning_rate=0.1, momentum=0.9, nesterov=False,
                         weight_decay=0.0)
    loss_fn = losses.SparseCategoricalCrossentropy(from_logits=True)

    for epoch in range(epochs):
        model.train()
        total, count = 0.0, 0
        for xb, yb in mn.data.batches(x_train, y_train, batch_size=32, shuffle=True, seed=epoch):
            opt.zero_grad()
            out = model(xb, training=True)       # mn.Tensor of logits, (B, 10)
            loss = loss_fn(yb, out)              # Keras order (y_true, y_pred), always
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
            count += len(xb)
        print(f"epoch {epoch + 1}/{epochs}: train loss {total / count:.4f}, "
              f"test accuracy {accuracy(model, x_test, y_test):.2%}")
    final = accuracy(model, x_test, y_test)
    print(f"final test accuracy {final:.2%}")
    return final


if __name__ == "__main__":
    main()
