"""The loss skips masked steps: a (batch, timesteps) mask carried by the model's output
(Embedding(mask_zero=True) / Masking -> recurrent layer(return_sequences) -> Dense or
TimeDistributed) weights the per-step losses as Keras 3's ``apply_mask`` does, and the
compiled metrics see only the unmasked steps."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses
from minnet.layers.embedding import get_keras_mask, set_keras_mask


def log_softmax(p):
    p = p - p.max(-1, keepdims=True)
    return p - np.log(np.exp(p).sum(-1, keepdims=True))


def sparse_ce(logits, labels):
    return -np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]


def padded_batch(rng, n=6, t=7, vocab=12, pre=False):
    lengths = rng.integers(1, t + 1, n)
    lengths[0] = t
    ids = np.zeros((n, t), np.int64)
    for i, length in enumerate(lengths):
        tokens = rng.integers(1, vocab, length)
        if pre:
            ids[i, t - length:] = tokens
        else:
            ids[i, :length] = tokens
    return ids, ids != 0


def tagger(vocab=12, classes=4, time_distributed=False, kind=layers.LSTM):
    mn.manual_seed(3)
    head = layers.Dense(classes)
    return mn.Sequential([
        layers.Embedding(vocab, 5, mask_zero=True),
        kind(6, return_sequences=True),
        layers.TimeDistributed(head) if time_distributed else head,
    ])


# ---------------------------------------------------------------------- the loss objects

@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none",
                                       "mean_with_sample_weight"])
@pytest.mark.parametrize("with_weight", [False, True])
def test_sparse_ce_applies_the_mask_as_keras(reduction, with_weight):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 5, 3))
    labels = rng.integers(0, 3, (4, 5))
    mask = rng.random((4, 5)) > 0.4
    weight = rng.random(4) + 0.5 if with_weight else None
    y_pred = set_keras_mask(mn.tensor(logits), mask)
    got = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)(
        labels, y_pred, sample_weight=weight)
    ce = sparse_ce(logits, labels)
    w = mask * (1.0 if weight is None else weight[:, None])
    if reduction == "sum_over_batch_size":
        expected = (ce * w).sum() / mask.sum()
    elif reduction == "sum":
        expected = (ce * w).sum()
    elif reduction == "mean_with_sample_weight":
        expected = (ce * w).sum() / w.sum()
    else:
        expected = ce * w
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_mse_masked_mean_and_gradient_of_masked_steps_is_zero():
    rng = np.random.default_rng(1)
    pred = rng.standard_normal((3, 4, 2))
    target = rng.standard_normal((3, 4, 2))
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 1, 0]], bool)
    y_pred = mn.tensor(pred, requires_grad=True)
    out = y_pred * 1.0
    set_keras_mask(out, mask)
    loss = losses.MeanSquaredError()(target, out)
    per_step = ((pred - target) ** 2).mean(-1)
    np.testing.assert_allclose(loss.item(), per_step[mask].mean(), rtol=1e-12)
    loss.backward()
    assert np.all(y_pred.grad[~mask] == 0) and np.all(y_pred.grad[mask] != 0)
    expected_grad = 2 * (pred - target) / 2 / mask.sum() * mask[..., None]
    np.testing.assert_allclose(y_pred.grad, expected_grad, rtol=1e-12)


def test_everything_masked_gives_zero_loss_and_zero_gradient():
    y_pred = mn.tensor(np.ones((2, 3, 4)), requires_grad=True)
    out = y_pred * 1.0
    set_keras_mask(out, np.zeros((2, 3), bool))
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)(np.zeros((2, 3), np.int64), out)
    loss.backward()
    assert loss.item() == 0.0 and np.all(y_pred.grad == 0)


def test_ignore_class_joins_the_mask():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 5, 3))
    labels = np.array([[0, 1, 2, 2, 1], [2, 2, 0, 1, 1]])
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)
    got = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=2)(
        labels, set_keras_mask(mn.tensor(logits), mask))
    keep = mask & (labels != 2)
    np.testing.assert_allclose(got.item(), sparse_ce(logits, np.where(labels == 2, 0, labels))[keep].mean(),
                               rtol=1e-12)


def test_mask_that_does_not_fit_the_losses_is_an_error():
    y_pred = set_keras_mask(mn.tensor(np.zeros((2, 3))), np.ones((2, 5), bool))
    with pytest.raises(ValueError, match="mask"):
        losses.MeanSquaredError()(np.zeros((2, 3)), y_pred)


# ---------------------------------------------------------------------- through the models

def test_mask_flows_through_dense_dropout_activation():
    ids, mask = padded_batch(np.random.default_rng(3))
    model = mn.Sequential([layers.Embedding(12, 4, mask_zero=True),
                           layers.GRU(5, return_sequences=True), layers.Dropout(0.1),
                           layers.Dense(3), layers.Activation("relu")])
    np.testing.assert_array_equal(get_keras_mask(model(ids)), mask)
    inputs = mn.Input((7,))
    h = layers.Embedding(12, 4, mask_zero=True)(inputs)
    h = layers.LSTM(5, return_sequences=True)(h)
    functional = mn.Model(inputs, layers.Dense(3)(h))
    np.testing.assert_array_equal(get_keras_mask(functional(ids)), mask)
    # A layer that changes the time axis drops it (no silent misuse).
    assert get_keras_mask(layers.LSTM(2)(layers.Embedding(12, 4, mask_zero=True)(ids))) is None


@pytest.mark.parametrize("time_distributed", [False, True])
@pytest.mark.parametrize("pre", [False, True])
def test_evaluate_equals_the_loss_on_the_unpadded_steps(time_distributed, pre):
    rng = np.random.default_rng(4)
    ids, mask = padded_batch(rng, pre=pre)
    labels = rng.integers(0, 4, ids.shape)
    model = tagger(time_distributed=time_distributed)
    model.compile("adam", losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    loss, accuracy = model.evaluate(ids, labels, batch_size=len(ids), verbose=0)
    logits = model.predict(ids, verbose=0)
    np.testing.assert_allclose(loss, sparse_ce(logits, labels)[mask].mean(), rtol=1e-5)
    np.testing.assert_allclose(accuracy, (logits.argmax(-1) == labels)[mask].mean(), rtol=1e-12)
    # The padded steps do not matter: change their labels, same numbers.
    scrambled = np.where(mask, labels, (labels + 1) % 4)
    np.testing.assert_allclose(model.evaluate(ids, scrambled, batch_size=len(ids), verbose=0),
                               [loss, accuracy], rtol=1e-6)


def test_post_padded_loss_equals_each_sequence_alone_and_padded_steps_get_no_gradient():
    rng = np.random.default_rng(5)
    ids, mask = padded_batch(rng)
    labels = rng.integers(0, 4, ids.shape)
    model = tagger()
    loss_fn = losses.SparseCategoricalCrossentropy(from_logits=True)
    out = model(ids, training=True)
    captured = {}
    out.register_hook(lambda g: captured.setdefault("grad", np.array(getattr(g, "data", g))))
    loss = loss_fn(labels, out)
    # Reference: each sequence alone, trimmed to its real steps, all real steps averaged.
    per_step = []
    for row in range(len(ids)):
        length = int(mask[row].sum())
        h = ids[row:row + 1, :length]
        for layer in model.layers:
            h = layer(h)
        logits = h.numpy()[0]
        per_step.extend(sparse_ce(logits, labels[row, :length]))
    np.testing.assert_allclose(loss.item(), np.mean(per_step), rtol=1e-5)
    loss.backward()
    grad = captured["grad"]
    assert np.all(grad[~mask] == 0) and np.abs(grad[mask]).sum() > 0


def test_sample_weight_and_mask_in_fit():
    rng = np.random.default_rng(6)
    ids, mask = padded_batch(rng, n=8)
    labels = rng.integers(0, 4, ids.shape)
    weight = rng.random(len(ids)) + 0.5
    model = tagger()
    model.compile("sgd", losses.SparseCategoricalCrossentropy(from_logits=True))
    got = model.evaluate(ids, labels, sample_weight=weight, batch_size=len(ids), verbose=0)
    ce = sparse_ce(model.predict(ids, verbose=0), labels)
    np.testing.assert_allclose(got, (ce * mask * weight[:, None]).sum() / mask.sum(), rtol=1e-5)


def test_keras_style_padded_tagger_trains():
    # A Keras 3 script with only its import changed: tag each token with its parity;
    # sequences of random lengths, post-padded with 0 by pad_sequences.
    rng = np.random.default_rng(7)
    sequences = [list(rng.integers(1, 20, rng.integers(3, 12))) for _ in range(256)]
    x = mn.utils.pad_sequences(sequences, padding="post")
    y = np.where(x == 0, 0, x % 2)
    mn.manual_seed(0)
    model = mn.Sequential([
        layers.Embedding(20, 16, mask_zero=True),
        layers.LSTM(16, return_sequences=True),
        layers.Dense(2),
    ])
    model.compile(optimizer="adam",
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=12, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9


def test_functional_bidirectional_time_distributed_model_skips_masked_steps():
    rng = np.random.default_rng(8)
    ids, mask = padded_batch(rng, n=5, t=6)
    labels = rng.integers(0, 3, ids.shape)
    mn.manual_seed(2)
    inputs = mn.Input((6,))
    h = layers.Embedding(12, 4, mask_zero=True)(inputs)
    h = layers.Bidirectional(layers.GRU(3, return_sequences=True))(h)
    model = mn.Model(inputs, layers.TimeDistributed(layers.Dense(3))(h))
    assert model.output_shape == (None, 6, 3)
    model.compile("adam", losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    loss, accuracy = model.evaluate(ids, labels, batch_size=len(ids), verbose=0)
    logits = model.predict(ids, verbose=0)
    np.testing.assert_allclose(loss, sparse_ce(logits, labels)[mask].mean(), rtol=1e-5)
    np.testing.assert_allclose(accuracy, (logits.argmax(-1) == labels)[mask].mean(), rtol=1e-12)
