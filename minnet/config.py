"""Global settings, as Keras's ``keras.config``: image layout and default float type.

``image_data_format()`` is ``"channels_last"`` (Keras's default: images are
``(batch, height, width, channels)``); ``set_image_data_format("channels_first")`` switches
every layer whose ``data_format`` is left to ``None`` to PyTorch's ``(batch, channels,
height, width)``. ``floatx()`` is the dtype layers create their weights in (``"float32"``).

``set_deterministic(True)`` makes every result bit-identical whatever ``mn.set_num_threads``
says (GEMMs split by shape, not by thread count), at a cost: off by default.

This module imports nothing above itself (the kernels only), so every floor may read it.

Example:
    >>> import minnet as mn
    >>> mn.config.image_data_format()
    'channels_last'
    >>> mn.config.set_image_data_format("channels_first")
    >>> mn.config.image_data_format()
    'channels_first'
    >>> mn.config.set_image_data_format("channels_last")
"""
import os
import warnings

from minnet._ext import _base

__all__ = ["image_data_format", "set_image_data_format", "floatx", "set_floatx",
           "normalize_data_format", "channel_axis", "set_deterministic", "is_deterministic",
           "epsilon", "set_epsilon", "backend", "set_backend", "DTypePolicy", "dtype_policy",
           "set_dtype_policy", "max_epochs", "set_max_epochs", "max_steps_per_epoch",
           "set_max_steps_per_epoch", "capped_epochs", "capped_steps_per_epoch",
           "enable_interactive_logging", "disable_interactive_logging",
           "is_interactive_logging_enabled", "enable_traceback_filtering",
           "disable_traceback_filtering", "is_traceback_filtering_enabled",
           "enable_flash_attention", "disable_flash_attention", "is_flash_attention_enabled",
           "enable_unsafe_deserialization", "is_unsafe_deserialization_enabled", "is_nnx_enabled"]

_DATA_FORMATS = ("channels_last", "channels_first")
_FLOATX = ("float32", "float64")
_settings = {"image_data_format": "channels_last", "floatx": "float32"}


def image_data_format():
    """The default image layout: ``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW)."""
    return _settings["image_data_format"]


def set_image_data_format(data_format):
    """Set the default image layout for layers whose ``data_format`` is ``None``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.

    Raises:
        ValueError: any other value.
    """
    if data_format not in _DATA_FORMATS:
        raise ValueError("Invalid value for argument `data_format`: expected 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}")
    _settings["image_data_format"] = data_format


def floatx():
    """The default float type of new weights: ``"float32"`` or ``"float64"``."""
    return _settings["floatx"]


def set_floatx(value):
    """Set the default float type (``"float32"`` or ``"float64"``).

    Raises:
        ValueError: any other value (minnet's kernels are float32/float64 only).
    """
    if value not in _FLOATX:
        raise ValueError("Invalid value for argument `value`: expected 'float32' or 'float64'. "
                         f"Received: value={value!r}")
    _settings["floatx"] = value


def normalize_data_format(data_format):
    """``None`` -> the global setting; a valid name -> itself; anything else -> ValueError.

    Accepts Keras's spellings only (``"channels_last"``, ``"channels_first"``), plus the
    upper-case forms Keras also normalises.
    """
    if data_format is None:
        return _settings["image_data_format"]
    if isinstance(data_format, str) and data_format.lower() in _DATA_FORMATS:
        return data_format.lower()
    raise ValueError("Invalid value for argument `data_format`: expected 'channels_last', "
                     f"'channels_first' or None. Received: data_format={data_format!r}")


def channel_axis(data_format, ndim):
    """The channel axis of a tensor of ``ndim`` dimensions (batch first) in ``data_format``."""
    return ndim - 1 if normalize_data_format(data_format) == "channels_last" else 1


def set_deterministic(flag=True):
    """Bit-identical results for any thread count (``torch.use_deterministic_algorithms``).

    With ``True``, minnet's GEMMs (Dense, convolution, recurrent projections) are split into
    blocks chosen by the matrix shapes alone, so 1, 2, 3 or 64 threads give the same bits;
    the other kernels (convolution weight gradients, batch-norm statistics, sums, dropout
    masks, embedding scatter-adds) reduce in a fixed order in either mode. Off by default:
    the fixed split re-packs a GEMM operand once per block and made the MLP benchmark's
    Dense layers slower at one thread (benchmarks/bench_deterministic.py; docs/performance.md,
    "Deterministic mode").

    Args:
        flag: bool.
    """
    if not isinstance(flag, bool):
        raise TypeError(f"Invalid value for argument `flag`: expected True or False. "
                        f"Received: flag={flag!r}")
    _base.set_deterministic(flag)


def is_deterministic():
    """Whether ``set_deterministic(True)`` is in force."""
    return bool(_base.is_deterministic())


# ---------------------------------------------------------------------------------------
# The rest of keras.config (issue 28): epsilon, backend, dtype policies, debugging caps, flags
# ---------------------------------------------------------------------------------------

def _env_int(name):
    value = os.environ.get(name)
    return int(value) if value else None


_settings.update(epsilon=1e-7, max_epochs=_env_int("KERAS_MAX_EPOCHS"),
                 max_steps_per_epoch=_env_int("KERAS_MAX_STEPS_PER_EPOCH"),
                 interactive_logging=True, traceback_filtering=True, flash_attention=None,
                 unsafe_deserialization=False)


def epsilon():
    """The fuzz factor of the losses' clipping and the constraints' divisions (1e-7, Keras's)."""
    return _settings["epsilon"]


def set_epsilon(value):
    """Set ``epsilon()`` (a positive float); the losses and constraints read it at each call."""
    value = float(value)
    if not value > 0:
        raise ValueError(f"Invalid value for argument `value`: expected a positive float. "
                         f"Received: value={value}")
    _settings["epsilon"] = value


def backend():
    """``"minnet"``: minnet is its own backend (NumPy arrays and its Cython kernels)."""
    return "minnet"


def set_backend(backend):
    """Keras switches between TensorFlow, JAX and PyTorch here; minnet has one backend, so
    only ``"minnet"`` is accepted (anything else is a ValueError naming the alternative)."""
    if backend != "minnet":
        raise ValueError(f"Invalid value for argument `backend`: minnet runs on its own kernels "
                         f"and has no {backend!r} backend; use Keras itself for that backend, or "
                         f"mn.interop.to_torch(model) to move a model to PyTorch. Received: "
                         f"backend={backend!r}")


class DTypePolicy:
    """Keras's dtype policy for ``"float32"`` and ``"float64"`` (variables and computations
    in the same dtype; minnet has no mixed precision)."""

    def __init__(self, name=None):
        name = floatx() if name is None else name
        if name not in _FLOATX:
            raise ValueError(f"Invalid value for argument `name`: expected 'float32' or 'float64' "
                             f"(minnet has no mixed-precision policies such as "
                             f"'mixed_float16'). Received: name={name!r}")
        self.name = name

    @property
    def compute_dtype(self):
        return self.name

    @property
    def variable_dtype(self):
        return self.name

    def get_config(self):
        return {"name": self.name}

    def __repr__(self):
        return f'<DTypePolicy "{self.name}">'


def dtype_policy():
    """The global policy: ``DTypePolicy(floatx())``."""
    return DTypePolicy(floatx())


def set_dtype_policy(policy):
    """Set the global policy (``"float32"``, ``"float64"`` or a ``DTypePolicy``): the same as
    ``set_floatx``."""
    name = policy.name if isinstance(policy, DTypePolicy) else policy
    set_floatx(DTypePolicy(name).name)


def _optional_count(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"Invalid value for argument `{name}`: expected None or an int >= 1. "
                         f"Received: {name}={value!r}")
    return value


def max_epochs():
    """The cap on ``fit``'s epochs (None: none), from ``set_max_epochs`` or ``KERAS_MAX_EPOCHS``."""
    return _settings["max_epochs"]


def set_max_epochs(max_epochs):
    """Cap every ``fit`` at ``max_epochs`` epochs (None removes the cap), for debugging runs."""
    _settings["max_epochs"] = _optional_count("max_epochs", max_epochs)


def max_steps_per_epoch():
    """The cap on the steps of an epoch of fit/evaluate/predict (None: none)."""
    return _settings["max_steps_per_epoch"]


def set_max_steps_per_epoch(max_steps_per_epoch):
    """Cap every epoch at ``max_steps_per_epoch`` batches (None removes the cap)."""
    _settings["max_steps_per_epoch"] = _optional_count("max_steps_per_epoch", max_steps_per_epoch)


def capped_epochs(epochs):
    """``epochs`` under ``max_epochs()`` (Keras warns "Limiting epochs to N")."""
    cap = max_epochs()
    if cap and cap < epochs:
        warnings.warn(f"Limiting epochs to {cap}", UserWarning, stacklevel=3)
        return cap
    return epochs


def capped_steps_per_epoch(steps_per_epoch):
    """``steps_per_epoch`` under ``max_steps_per_epoch()`` (Keras's rule)."""
    cap = max_steps_per_epoch()
    if cap and (not steps_per_epoch or cap < steps_per_epoch):
        warnings.warn(f"Limiting steps_per_epoch to {cap}", UserWarning, stacklevel=3)
        return cap
    return steps_per_epoch


def enable_interactive_logging():
    """Progress bars and messages go to stdout (the default)."""
    _settings["interactive_logging"] = True


def disable_interactive_logging():
    """Keras sends its messages to ``absl`` logging instead; minnet records the flag, which
    ``is_interactive_logging_enabled()`` reports."""
    _settings["interactive_logging"] = False


def is_interactive_logging_enabled():
    return _settings["interactive_logging"]


def enable_traceback_filtering():
    """Keras trims its own frames from tracebacks; minnet never hides frames, so this only
    sets the flag ``is_traceback_filtering_enabled()`` reports."""
    _settings["traceback_filtering"] = True


def disable_traceback_filtering():
    _settings["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    return _settings["traceback_filtering"]


def enable_flash_attention():
    """Prefer the fused attention kernel where one applies (the flag the attention layers read)."""
    _settings["flash_attention"] = True


def disable_flash_attention():
    _settings["flash_attention"] = False


def is_flash_attention_enabled():
    """None (the default: the layers choose), True or False."""
    return _settings["flash_attention"]


def enable_unsafe_deserialization():
    """Allow loading ``Lambda`` layers and other code from files (Keras's safe mode off)."""
    _settings["unsafe_deserialization"] = True


def is_unsafe_deserialization_enabled():
    return _settings["unsafe_deserialization"]


def is_nnx_enabled():
    """False: Flax NNX is a JAX-backend feature."""
    return False


# -- the distribution (minnet.distribution.set_distribution stores it here) -----------------
# The trainer and the callbacks read it through these two functions and call only the small
# interface the object documents (shard, all-reduce, broadcast, is_chief), so no floor below
# minnet.distribution imports MPI. Not Keras names: keras.config has no such setting.
def current_distribution():
    """The object given to ``mn.distribution.set_distribution`` (None: one process)."""
    return _settings.get("distribution")


def store_distribution(value):
    """Keep ``value`` (a ``DataParallel`` or None) for the trainer and the callbacks to find."""
    _settings["distribution"] = value


def is_chief():
    """True in one process, and on rank 0 of a data-parallel run (the rank that prints and writes)."""
    value = _settings.get("distribution")
    return value is None or value.is_chief
