"""CSVLogger writes Keras's columns (Keras 3 as the oracle)."""
import csv

import numpy as np
import pytest

import minnet as mn


def _header_and_cells(path):
    rows = list(csv.reader(open(path)))
    return rows[0], [["NA" if c == "NA" else "x" for c in row] for row in rows[1:]]


@pytest.mark.parametrize("validation, reduce_lr", [(0.0, False), (0.25, False), (0.25, True),
                                                   (0.0, True)])
def test_csv_columns_match_keras(tmp_path, keras, validation, reduce_lr):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 4)).astype("float32"), rng.integers(0, 3, size=40)

    k_model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    k_model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    k_callbacks = [keras.callbacks.ReduceLROnPlateau()] if reduce_lr else []
    k_model.fit(x, y, epochs=2, verbose=0, validation_split=validation,
                callbacks=k_callbacks + [keras.callbacks.CSVLogger(str(tmp_path / "k.csv"))])

    model = mn.models.Sequential([mn.layers.Input((4,)), mn.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    callbacks = [mn.callbacks.ReduceLROnPlateau()] if reduce_lr else []
    model.fit(x, y, epochs=2, verbose=0, validation_split=validation,
              callbacks=callbacks + [mn.callbacks.CSVLogger(str(tmp_path / "m.csv"))])

    assert _header_and_cells(tmp_path / "m.csv") == _header_and_cells(tmp_path / "k.csv")
