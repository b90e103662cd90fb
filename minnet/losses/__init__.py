"""Loss objects: Keras's classes, argument order and reductions; PyTorch's numbers.

A loss object is called as ``loss(y_true, y_pred, sample_weight=None)``, **always in
Keras's order**, and returns a scalar ``Tensor`` to call ``.backward()`` on. (The
functions of ``minnet.functional`` take PyTorch's order, ``(input, target)``.) Nothing is
guessed: a call that looks swapped still computes what it was asked, and warns, naming
both orders, when ``y_true`` carries a graph from an operation while ``y_pred`` carries
none, or (probability losses) when ``y_pred`` holds only exact 0/1 values or one-hot rows
while ``y_true`` does not. A ``y_true`` that requires grad gets its gradient.

Each loss first computes one value per sample (Keras: the mean over the last axis for the
element-wise losses, the sum over classes for the cross-entropies), then reduces them as
Keras 3 does: ``"sum_over_batch_size"`` (default; alias ``"mean"``) divides the weighted
sum by the number of per-sample values (0 when there are none, never NaN), ``"sum"``
returns the weighted sum, ``"none"`` / ``None`` the weighted per-sample values, and
``"mean_with_sample_weight"`` divides by the sum of the weights. As in Keras, inputs of
rank 1 are **one sample**: ``MeanSquaredError()(y, p)`` with ``y, p`` of shape ``(N,)`` is
one loss value (the mean over the N), so ``"sum"`` and ``"none"`` give that one value and
a ``(N,)`` ``sample_weight`` multiplies it N times; ``(N,)`` against ``(N, 1)`` is N samples
(the rank-1 argument gains the axis of 1, Keras's ``squeeze_or_expand_to_same_rank``).

Every loss is built on ``minnet.functional`` and the autograd, so values and gradients
are those of the matching PyTorch module where there is one (``nn.MSELoss``,
``nn.L1Loss``, ``nn.HuberLoss``, ``nn.BCELoss``, ``nn.BCEWithLogitsLoss``,
``nn.CrossEntropyLoss``, ``nn.KLDivLoss``, ``nn.PoissonNLLLoss``, ...).

Example:
    >>> loss_fn = SparseCategoricalCrossentropy(from_logits=True)
    >>> loss = loss_fn(y_batch, model(x_batch))      # Keras order: (y_true, y_pred)
    >>> loss.backward()

The package is split by job: ``base`` (``Loss``, ``LossFunctionWrapper``, reductions,
masks, argument checks), ``regression``, ``probabilistic`` (cross-entropies, focal, KL
divergence, Poisson) and ``hinges``; this module re-exports every public name and resolves
losses by name (``get`` / ``serialize`` / ``deserialize``).
"""
from minnet import _registry
from minnet.losses.base import Loss, LossFunctionWrapper
from minnet.losses.hinges import CategoricalHinge, Hinge, SquaredHinge
from minnet.losses.probabilistic import BinaryCrossentropy, BinaryFocalCrossentropy, \
    CategoricalCrossentropy, CategoricalFocalCrossentropy, KLDivergence, Poisson, \
    SparseCategoricalCrossentropy
from minnet.losses.regression import CosineSimilarity, Huber, LogCosh, MeanAbsoluteError, \
    MeanAbsolutePercentageError, MeanSquaredError, MeanSquaredLogarithmicError
from minnet.losses.overlap import CategoricalGeneralizedCrossEntropy, Dice, Tversky
from minnet.losses.sequence_and_metric import CTC, Circle, circle, ctc
from minnet.losses.functions import binary_crossentropy, binary_focal_crossentropy, \
    categorical_crossentropy, categorical_focal_crossentropy, \
    categorical_generalized_cross_entropy, categorical_hinge, cosine_similarity, dice, hinge, \
    huber, kl_divergence, log_cosh, mean_absolute_error, mean_absolute_percentage_error, \
    mean_squared_error, mean_squared_logarithmic_error, poisson, \
    sparse_categorical_crossentropy, squared_hinge, tversky

__all__ = [
    "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
    "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
    "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge", "CosineSimilarity",
    "MeanSquaredLogarithmicError", "MeanAbsolutePercentageError", "Poisson", "LogCosh",
    "CategoricalFocalCrossentropy", "BinaryFocalCrossentropy",
    "Dice", "Tversky", "CategoricalGeneralizedCrossEntropy",
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "cosine_similarity",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "sparse_categorical_crossentropy", "kl_divergence",
    "poisson", "hinge", "squared_hinge", "categorical_hinge", "dice", "tversky",
    "categorical_generalized_cross_entropy",
    "CTC", "Circle", "ctc", "circle",
    "get", "serialize", "deserialize",
]


# ---------------------------------------------------------------------------------------
# Lookup by name, serialisation (through the one registry)
# ---------------------------------------------------------------------------------------

_ALIASES = {
    MeanSquaredError: ("mse", "mean_squared_error", "MSE"),
    MeanAbsoluteError: ("mae", "mean_absolute_error", "MAE"),
    Huber: ("huber", "huber_loss"),
    BinaryCrossentropy: ("binary_crossentropy", "bce"),
    CategoricalCrossentropy: ("categorical_crossentropy", "cce"),
    SparseCategoricalCrossentropy: ("sparse_categorical_crossentropy", "scce"),
    KLDivergence: ("kl_divergence", "kld", "kullback_leibler_divergence", "KLD"),
    Hinge: ("hinge",),
    SquaredHinge: ("squared_hinge",),
    CategoricalHinge: ("categorical_hinge",),
    CosineSimilarity: ("cosine_similarity",),
    MeanSquaredLogarithmicError: ("msle", "mean_squared_logarithmic_error", "MSLE"),
    MeanAbsolutePercentageError: ("mape", "mean_absolute_percentage_error", "MAPE"),
    Poisson: ("poisson",),
    LogCosh: ("log_cosh", "logcosh"),
    CategoricalFocalCrossentropy: ("categorical_focal_crossentropy",),
    BinaryFocalCrossentropy: ("binary_focal_crossentropy",),
    Dice: ("dice",), Tversky: ("tversky",),
    CategoricalGeneralizedCrossEntropy: ("categorical_generalized_cross_entropy",),
    CTC: ("ctc",), Circle: ("circle",),
}

for _cls, _names in _ALIASES.items():
    _registry.register("loss", _cls, aliases=_names)
del _cls, _names


def get(identifier, custom_objects=None):
    """Resolve a loss identifier.

    Args:
        identifier: a ``Loss`` instance (returned as is), a ``Loss`` subclass, a name
            (Keras's: ``"mse"``, ``"mae"``, ``"huber"``, ``"binary_crossentropy"``/``"bce"``,
            ``"categorical_crossentropy"``, ``"sparse_categorical_crossentropy"``, ``"kld"``,
            ``"hinge"``, ``"msle"``, ``"mape"``, ``"poisson"``, ``"log_cosh"``, ... or a class
            name), a ``serialize`` dict, a callable ``fn(y_true, y_pred) -> per-sample
            losses`` (wrapped in ``LossFunctionWrapper``), or None (returned as is).
        custom_objects: optional ``{name: class}`` for custom losses.

    Returns:
        A ``Loss`` (or None).

    Example:
        >>> get("sparse_categorical_crossentropy")
        SparseCategoricalCrossentropy(from_logits=False, ignore_class=None, ...)
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, (str, dict)):
        return _registry.get("loss", identifier, custom_objects)
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise TypeError(f"Invalid value for argument `identifier`: expected a str, a Loss or a callable. "
                    f"Received: identifier={identifier!r}")


def serialize(loss):
    """``{"class_name": ..., "config": ...}`` (JSON-able) for a loss object."""
    if not isinstance(loss, Loss):
        raise TypeError(f"Invalid value for argument `loss`: expected a Loss. Received: loss={loss!r}")
    if isinstance(loss, LossFunctionWrapper):
        raise ValueError(f"Cannot serialize loss {loss.name!r} made from a function; subclass Loss "
                         f"and pass it in custom_objects instead.")
    return _registry.serialize("loss", loss)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``; ``custom_objects`` maps class names to custom Loss classes."""
    return _registry.deserialize("loss", config, custom_objects)
