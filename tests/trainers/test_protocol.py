"""The trainer asks objects through a small protocol, not by probing attributes (issue #26,
item 6; the table is in docs/internals.md)."""
import ast
import pathlib

import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses
from minnet.trainers import data_adapters
from minnet.trainers.compile_utils import is_sparse_loss
from minnet.trainers.epoch_iterator import EpochIterator

TRAINERS = pathlib.Path(mn.__file__).parent / "trainers"
# The one boundary where foreign objects (torch tensors, a Keras PyDataset, a DataLoader) are
# recognised and wrapped; everything after it calls the protocol.
BOUNDARY = {"data_adapters.py"}


@pytest.mark.parametrize("path", sorted(p.name for p in TRAINERS.glob("*.py") if p.name not in BOUNDARY))
def test_no_attribute_probing_outside_the_data_boundary(path):
    tree = ast.parse((TRAINERS / path).read_text())
    probes = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")]
    probes += [node.lineno for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"]
    assert probes == [], f"minnet/trainers/{path} probes attributes at lines {probes}"


def test_losses_answer_the_sparse_and_ignore_class_questions():
    assert losses.SparseCategoricalCrossentropy(name="labels").sparse_labels
    assert is_sparse_loss(losses.get(mn.losses.sparse_categorical_crossentropy))
    assert not is_sparse_loss(losses.MeanSquaredError())
    assert is_sparse_loss("sparse_categorical_crossentropy") and is_sparse_loss("scce")
    assert not is_sparse_loss(None) and not is_sparse_loss([losses.MeanSquaredError()])
    assert losses.MeanSquaredError().ignore_class is None
    assert losses.SparseCategoricalCrossentropy(ignore_class=0).ignore_class == 0


def test_layers_default_to_unsynchronized_statistics():
    assert layers.Dense(2).synchronized is False
    assert layers.BatchNormalization(synchronized=True).synchronized is True


class _Indexed:
    def __init__(self, n=3):
        self.n = n
        self.ends = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full((2, 1), i, "float32"), np.zeros((2, 1), "float32")


class _IndexedIterable(_Indexed):          # a torch DataLoader: len, iter, no on_epoch_end
    def __iter__(self):
        return (self[i] for i in range(self.n))


class _KerasLikePyDataset(_IndexedIterable):
    def on_epoch_end(self):
        self.ends += 1


@pytest.mark.parametrize("source, kind", [
    (_Indexed(), data_adapters.PyDatasetAdapter),
    (_KerasLikePyDataset(), data_adapters.PyDatasetAdapter),
    (_IndexedIterable(), data_adapters.GeneratorDataAdapter),
    (iter([1, 2]), data_adapters.GeneratorDataAdapter),
])
def test_a_foreign_source_is_recognised_and_wrapped_once(source, kind):
    assert data_adapters.is_dataset(source)
    assert type(data_adapters.dataset_adapter(source, False, None)) is kind


@pytest.mark.parametrize("value", [None, np.zeros(3), [1, 2], (1,), {"a": 1}, "text", b"x",
                                   mn.tensor(np.zeros(2))])
def test_arrays_and_strings_are_not_data_sets(value):
    assert not data_adapters.is_dataset(value)


def test_a_pydataset_epoch_end_is_called_through_the_adapter():
    source = _KerasLikePyDataset()
    iterator = EpochIterator(data_adapters.dataset_adapter(source, False, None), prefetch=False)
    for _ in range(2):
        assert len(list(iterator.epoch(0))) == 3
    assert source.ends == 2


def test_an_adapter_needs_only_its_batches():
    class Two(data_adapters.DataAdapter):
        num_batches = 2

        def epoch_batches(self, epoch, shuffle=None):
            yield from ((np.ones((1, 1), "float32"), np.ones((1, 1), "float32")),) * 2

    iterator = EpochIterator(Two(), steps_per_epoch=1)
    assert [step for step, _ in iterator.epoch(0)] == [0]
    iterator.close()


def test_a_subclassed_model_with_a_nonfinite_output_is_named():
    class Broken(mn.Model):
        def __init__(self):
            super().__init__(name="broken")
            self.dense = layers.Dense(1)

        def call(self, x, training=False):
            return mn.ops.log(self.dense(x) * 0.0 - 1.0)

    model = Broken()
    x = np.ones((2, 3), "float32")
    model(x)
    assert model._layer_outputs(x) is None
    with np.errstate(invalid="ignore"):
        assert model.locate_nonfinite(x) == "broken"
