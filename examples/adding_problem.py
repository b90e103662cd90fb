"""The adding problem: an LSTM learns it, a SimpleRNN does not, and the gradients show why.

Each sequence has SEQ_LEN steps of (value, marker); two steps are marked and the target
is the sum of their values (mn.datasets.make_sequence_task("adding")). Always answering
1.0 gives a mean squared error of about 0.167; to beat it a model must carry the first
marked value across up to SEQ_LEN steps.

Fixed setup: seed 0, SEQ_LEN = 60, 32 units, Adam(learning rate 0.01), batch 64, STEPS
gradient steps on fresh batches, then the test MSE on 1,000 new sequences. Measured
(full run, 2026-12-03, x86-64 with AVX-512, OpenBLAS's SkylakeX and Haswell kernels, 1 and
2 threads): LSTM test MSE 0.0005, SimpleRNN 0.1759 / 0.1664 (guessing 1.0: 0.166);
|dL/dx_t| first/last step 1.2 for the LSTM, 5.0e-06 / 1.1e-07 for the SimpleRNN. float32
rounding differs between CPUs and BLAS kernels, and 1,200 steps amplify it, so another
machine prints other digits; with two other seeds the LSTM scored 0.0003-0.0007 and the
SimpleRNN no better than guessing. At SEQ_LEN = 40 (before 2026-12-03) the SimpleRNN
sometimes learned part of the task (MSE 0.110 against the guess's 0.156, first/last ratio
1.8, with the SkylakeX kernel): 60 steps make its failure hold in every setting tried.
What holds everywhere, and tests/test_examples.py checks on every run: LSTM MSE < 0.01,
SimpleRNN MSE above 0.8 times the guess's, and a first/last gradient ratio above 0.1 for
the LSTM and below 0.01 for the SimpleRNN.

Why: the printout shows, for each model, the norm of d(loss)/d(input at step t) for the
first, middle and last steps of a test batch. Through a SimpleRNN it shrinks by a factor
at every step (a product of Jacobians diag(1 - h^2) W_hh), so the first marked value
gets almost no gradient: vanishing gradients through time. The LSTM's cell state
c_t = f * c_{t-1} + i * g passes the gradient on multiplied only by the forget gate
(near 1), so early steps still get it. GradientMonitor logs the recurrent layers'
weight-gradient norms during training too.

Run:  python examples/adding_problem.py [--quick]      (--short is the same flag)
"""
import argparse

import numpy as np

import minnet as mn
from minnet import callbacks, layers

SEQ_LEN = 60
UNITS = 32
STEPS = 1200


def build(kind):
    recurrent = layers.LSTM(UNITS, name="recurrent") if kind == "LSTM" else \
        layers.SimpleRNN(UNITS, name="recurrent")
    return mn.Sequential([layers.Input((SEQ_LEN, 2)), recurrent, layers.Dense(1, name="output")])


def input_gradient_norms(model, x, y):
    """||d loss / d x_t|| for every step t of one batch."""
    x_in = mn.tensor(x, requires_grad=True)
    loss = mn.losses.MeanSquaredError()(y, model(x_in))
    loss.backward()
    return np.linalg.norm(x_in.grad, axis=(0, 2))


def main(quick=False):
    steps = 40 if quick else STEPS
    x_train, y_train = mn.datasets.make_sequence_task("adding", 64 * steps, SEQ_LEN, seed=0)
    x_test, y_test = mn.datasets.make_sequence_task("adding", 1000, SEQ_LEN, seed=1)
    print(f"adding problem: {SEQ_LEN} steps, {steps} training steps of batch 64; "
          f"predicting 1.0 scores MSE {np.mean((y_test - 1.0) ** 2):.3f}")
    for kind in ("SimpleRNN", "LSTM"):
        mn.manual_seed(0)
        model = build(kind)
        model.compile(optimizer=mn.optimizers.Adam(learning_rate=0.01), loss="mse")
        history = model.fit(x_train, y_train, batch_size=64, epochs=1, shuffle=False, verbose=0,
                            callbacks=[callbacks.GradientMonitor()])
        mse = float(np.mean((model.predict(x_test, batch_size=500) - y_test) ** 2))
        norms = input_gradient_norms(model, x_test[:64], y_test[:64])
        print(f"{kind:9s}: test MSE {mse:.4f}; mean weight-gradient norm of the recurrent layer "
              f"{history.history['grad_norm/recurrent'][-1]:.2e}")
        print(f"           |dL/dx_t| at t = 1, {SEQ_LEN // 2}, {SEQ_LEN}: {norms[0]:.1e}, "
              f"{norms[SEQ_LEN // 2 - 1]:.1e}, {norms[-1]:.1e}  "
              f"(first/last: {norms[0] / norms[-1]:.1e})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", "--short", action="store_true", dest="quick",
                        help="40 training steps (smoke test)")
    main(parser.parse_args().quick)
