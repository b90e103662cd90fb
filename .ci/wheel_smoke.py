"""Smoke test of an installed minnet (a wheel or an sdist build), run from outside the checkout.

Imports the installed package, prints its build configuration, and trains a small CNN on
the digits that ship with it: what `.ci/run` and cibuildwheel's test step check.
"""
import os
import sys

import numpy as np

import minnet

here = os.path.dirname(os.path.abspath(minnet.__file__))
assert "site-packages" in here or "dist-packages" in here, f"not an installed minnet: {here}"
minnet.show_config()
(x_train, y_train), (x_test, y_test) = minnet.datasets.load_digits()
assert x_train.shape[1:] == (8, 8, 1), x_train.shape      # channels_last, Keras's default
minnet.manual_seed(0)
model = minnet.Sequential([minnet.layers.Input((8, 8, 1)),
                           minnet.layers.Conv2D(8, 3, padding="same"), minnet.layers.ReLU(),
                           minnet.layers.Flatten(), minnet.layers.Dense(10)])
model.compile(optimizer="adam", metrics=["accuracy"],
              loss=minnet.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, epochs=3, batch_size=32, verbose=0)
result = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
print("installed minnet trains:", result)
if not result["accuracy"] > 0.8 or not np.isfinite(result["loss"]):
    sys.exit(f"the installed minnet did not learn the digits: {result}")
