"""Train the same MLP under Keras 3 and minnet from the same initial weights, step for step.

Where ``keras_tutorial_parity.py`` compares final accuracies (which differ by the random draws),
this check removes the randomness: Keras builds the model with seed 0, its initial weights are
copied into minnet (kernels transposed, the one documented conversion), both train 3 epochs on
the same digits without shuffling or dropout, and the final weights are compared. It shows
what of minnet's training is Keras's to float rounding, and what differs by design (the
optimizer formulas of ``docs/coming_from_keras.md``): each adaptive optimizer is run twice on
minnet's side, as shipped (PyTorch's formula) and as a subclass carrying Keras 3's formula.
Keras is never a dependency: give the Python of an environment that has it::

    python benchmarks/keras_trajectory_parity.py --keras-python /tmp/kerasenv/bin/python
"""
import argparse
import math
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "keras_scripts"))
import make_data  # noqa: E402

import minnet as mn  # noqa: E402
from minnet import layers, optimizers  # noqa: E402

KERAS_SIDE = r'''
import os, sys, numpy as np
os.environ["KERAS_BACKEND"] = "torch"
import keras
from keras import layers
d = np.load(sys.argv[1])
x = d["x_train"].reshape(-1, 784).astype("float32") / 255
y = keras.utils.to_categorical(d["y_train"], 10)
keras.utils.set_random_seed(0)
model = keras.Sequential([layers.Input((784,)), layers.Dense(256, activation="relu"),
                          layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")])
opt = {"sgd": keras.optimizers.SGD(0.05, momentum=0.9), "adam": keras.optimizers.Adam(),
       "rmsprop": keras.optimizers.RMSprop()}[sys.argv[2]]
model.compile(loss="categorical_crossentropy", optimizer=opt)
init = [w.copy() for w in model.get_weights()]
h = model.fit(x, y, batch_size=64, epochs=3, shuffle=False, verbose=0)
np.savez(sys.argv[3], *init, *model.get_weights(), loss=np.array(h.history["loss"]))
'''


class KerasAdam(optimizers.Adam):
    """Adam with Keras 3's formula: epsilon added to sqrt(v), the bias correction in the step."""

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["m"], state["v"] = np.zeros_like(data), np.zeros_like(data)
        state["step"] = t = state["step"] + 1
        m, v = state["m"], state["v"]
        m += (grad - m) * (1 - self.beta_1)
        v += (grad * grad - v) * (1 - self.beta_2)
        alpha = lr * math.sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t)
        data -= alpha * m / (np.sqrt(v) + self.epsilon)


class KerasRMSprop(optimizers.RMSprop):
    """RMSprop with Keras 3's formula: epsilon inside the square root."""

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["v"] = np.zeros_like(data)
        v = state["v"]
        v *= self.rho
        v += (1 - self.rho) * grad * grad
        data -= lr * grad / np.sqrt(v + self.epsilon)


def minnet_run(data, make_opt, keras_file):
    k = np.load(keras_file)
    arrays = [k[f"arr_{i}"] for i in range(12)]
    x = data["x_train"].reshape(-1, 784).astype("float32") / 255
    y = mn.utils.to_categorical(data["y_train"], 10)
    model = mn.Sequential([layers.Input((784,)), layers.Dense(256, activation="relu"),
                           layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=make_opt())
    model.set_weights([a.T if a.ndim == 2 else a for a in arrays[:6]])
    history = model.fit(x, y, batch_size=64, epochs=3, shuffle=False, verbose=0)
    final = [a.T if a.ndim == 2 else a for a in model.get_weights()]
    diff = max(float(np.abs(a - b).max()) for a, b in zip(final, arrays[6:]))
    step = max(float(np.abs(b - a).max()) for a, b in zip(arrays[:6], arrays[6:]))
    return diff, step, history.history["loss"], k["loss"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keras-python", required=True, help="a Python with keras and torch installed")
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp())
    make_data.make(str(tmp))
    data = np.load(tmp / "digits28.npz")
    (tmp / "keras_side.py").write_text(KERAS_SIDE)
    cases = [("sgd", "SGD(0.05, momentum=0.9)", lambda: optimizers.SGD(0.05, momentum=0.9)),
             ("adam", "Adam() as shipped", lambda: optimizers.Adam()),
             ("adam", "Adam with Keras's formula", lambda: KerasAdam()),
             ("rmsprop", "RMSprop() as shipped", lambda: optimizers.RMSprop()),
             ("rmsprop", "RMSprop with Keras's formula", lambda: KerasRMSprop())]
    env = dict(os.environ, KERAS_BACKEND="torch", OMP_NUM_THREADS="1")
    print(f"{'minnet optimizer':32s} {'max |w diff|':>12s} {'max |w step|':>12s}   loss per epoch (keras / minnet)")
    done = {}
    for key, label, make in cases:
        out = tmp / f"keras_{key}.npz"
        if key not in done:
            subprocess.run([args.keras_python, str(tmp / "keras_side.py"), str(tmp / "digits28.npz"), key,
                            str(out)], env=env, check=True, capture_output=True)
            done[key] = True
        diff, step, ours, theirs = minnet_run(data, make, out)
        print(f"{label:32s} {diff:12.3g} {step:12.3g}   {np.round(theirs, 5)} / {np.round(ours, 5)}")


if __name__ == "__main__":
    main()
