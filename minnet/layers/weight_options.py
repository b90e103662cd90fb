"""Keras's per-weight options that a layer takes without listing them in its ``__init__``.

Keras spells a weight's regularizer and constraint ``<prefix>_regularizer`` and
``<prefix>_constraint`` (``kernel_regularizer``, ``recurrent_constraint``,
``depthwise_regularizer``, ``gamma_regularizer``, ...).  A layer class says which prefixes
it takes and which of its weights each one applies to in ``weight_option_targets``; the
default is Keras's ``kernel`` and ``bias``.  Layers whose weights carry other names set
their own (the recurrent layers keep PyTorch's ``weight_ih``/``weight_hh``, so Keras's
``kernel_*`` applies to ``weight_ih``, ``recurrent_*`` to ``weight_hh`` and ``bias_*`` to
both biases).  ``Layer.__init_subclass__`` takes these keywords off before the layer's own
``__init__`` runs and ``add_weight`` applies them by weight name.
"""

__all__ = ["DEFAULT_TARGETS", "RECURRENT_TARGETS", "SEPARABLE_TARGETS", "option_keywords", "option_for",
           "options_taken_by"]

DEFAULT_TARGETS = {"kernel": ("kernel",), "bias": ("bias",)}
RECURRENT_TARGETS = {"kernel": ("weight_ih",), "recurrent": ("weight_hh",), "bias": ("bias_ih", "bias_hh")}
SEPARABLE_TARGETS = {"depthwise": ("depthwise_kernel",), "pointwise": ("pointwise_kernel",), "bias": ("bias",)}
_KINDS = ("regularizer", "constraint")


def option_keywords(targets):
    """The keyword names ``targets`` stands for, in a fixed order."""
    return tuple(f"{prefix}_{kind}" for prefix in targets for kind in _KINDS)


def option_for(targets, options, weight_name, kind):
    """The ``kind`` (``"regularizer"``/``"constraint"``) given for the weight ``weight_name``
    among ``options`` (keyword -> object), or None."""
    for prefix, names in targets.items():
        if weight_name in names:
            value = options.get(f"{prefix}_{kind}")
            if value is not None:
                return value
    return None


def options_taken_by(cls):
    """The option keywords a layer class takes without listing them (its ``__init__``'s
    signature does not show them; the Keras-file reader asks here)."""
    return getattr(cls, "_option_kwargs", ())
