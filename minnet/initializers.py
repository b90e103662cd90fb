"""Weight initialisers: how a layer fills its kernel and bias when it is built.

An initialiser is any callable ``init(shape, dtype) -> np.ndarray``; what it returns is
copied into the new weight (``checked_call``), never adopted.  The classes here
follow Keras's names and formulas, and ``KaimingUniform`` / ``FanInUniform`` reproduce
PyTorch's defaults for ``Linear`` and ``Conv2d`` (what ``Dense`` and ``Conv2D`` use when
no ``kernel_initializer`` / ``bias_initializer`` is given).

Random initialisers draw from ``minnet._random.generator()`` (so ``mn.manual_seed``
makes them reproducible) unless they are given their own ``seed``.

Fans follow minnet's PyTorch weight layout ``(out, in, *receptive_field)``:
``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``.
A Dense kernel ``(units, in_features)`` has fan_in ``in_features``; a Conv2D kernel
``(filters, in_channels, kh, kw)`` has fan_in ``in_channels*kh*kw`` and fan_out
``filters*kh*kw``.

Example:
    >>> from minnet import initializers
    >>> w = initializers.get("glorot_uniform")((64, 32), "float32")
    >>> w.shape
    (64, 32)
"""
import math

import numpy as np
import scipy.linalg

from minnet import _random, _registry
from minnet._utils import get_window

__all__ = [
    "Initializer", "Zeros", "Ones", "Constant", "RandomUniform", "RandomNormal",
    "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeUniform",
    "HeNormal", "LecunUniform", "LecunNormal", "KaimingUniform", "FanInUniform",
    "Orthogonal", "Identity", "OrthogonalInitializer", "IdentityInitializer",
    "STFT", "STFTInitializer", "stft",
    "zeros", "ones", "constant", "random_uniform", "random_normal", "truncated_normal",
    "variance_scaling", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
    "lecun_uniform", "lecun_normal", "orthogonal", "identity",
    "compute_fans", "checked_call", "get", "serialize", "deserialize",
]

# stddev of a standard normal truncated to [-2, 2] (Keras uses the same constant to
# rescale truncated draws back to the requested variance).
_TRUNCATED_STD = 0.87962566103423978


def compute_fans(shape):
    """Fan-in and fan-out of a weight of ``shape`` in minnet's ``(out, in, *field)`` layout.

    Args:
        shape: tuple of ints.

    Returns:
        ``(fan_in, fan_out)`` as ints.  A 1-D shape (a bias) has fan_in = fan_out = its size.
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive_field, shape[0] * receptive_field


def _check_shape_dtype(shape, dtype):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"Invalid value for argument `shape`: expected a tuple of ints. "
                        f"Received: shape={shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"Invalid value for argument `shape`: expected non-negative sizes. "
                         f"Received: shape={shape}")
    dtype = np.dtype("float32" if dtype is None else dtype)
    if dtype.kind != "f":
        raise TypeError(f"Invalid value for argument `dtype`: expected a float dtype. "
                        f"Received: dtype={dtype}")
    return shape, dtype


class Initializer:
    """Base class: subclasses implement ``__call__(shape, dtype=None)`` and ``get_config``.

    ``seed=None`` draws from minnet's generator (``mn.manual_seed``); an int seed makes
    every call return the same values.
    """

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                                 or seed < 0):
            raise ValueError(f"Invalid value for argument `seed`: expected None or a non-negative "
                             f"int. Received: seed={seed!r}")
        self.seed = None if seed is None else int(seed)

    def _rng(self):
        return _random.generator() if self.seed is None else np.random.default_rng(self.seed)

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def get_config(self):
        return {"seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros."""

    def __init__(self):
        super().__init__(None)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return np.zeros(shape, dtype=dtype)

    def get_config(self):
        return {}


class Ones(Initializer):
    """All ones."""

    def __init__(self):
        super().__init__(None)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return np.ones(shape, dtype=dtype)

    def get_config(self):
        return {}


class Constant(Initializer):
    """Every element equal to ``value``."""

    def __init__(self, value=0.0):
        super().__init__(None)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"Invalid value for argument `value`: expected a number. "
                            f"Received: value={value!r}")
        self.value = float(value)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return np.full(shape, self.value, dtype=dtype)

    def get_config(self):
        return {"value": self.value}


class RandomUniform(Initializer):
    """Uniform on ``[minval, maxval)``."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        if not float(minval) < float(maxval):
            raise ValueError(f"Invalid value for argument `maxval`: expected maxval > minval. "
                             f"Received: minval={minval}, maxval={maxval}")
        self.minval, self.maxval = float(minval), float(maxval)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return self._rng().uniform(self.minval, self.maxval, size=shape).astype(dtype)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(Initializer):
    """Normal with ``mean`` and ``stddev``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        if not float(stddev) >= 0:
            raise ValueError(f"Invalid value for argument `stddev`: expected a non-negative "
                             f"float. Received: stddev={stddev}")
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return self._rng().normal(self.mean, self.stddev, size=shape).astype(dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _truncated_normal(rng, shape, stddev):
    """Normal(0, stddev) redrawn until within two standard deviations (as Keras/TF)."""
    values = rng.standard_normal(size=shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.standard_normal(size=int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values * stddev


class TruncatedNormal(Initializer):
    """Normal with ``mean``/``stddev``, values beyond two stddevs redrawn."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        if not float(stddev) >= 0:
            raise ValueError(f"Invalid value for argument `stddev`: expected a non-negative "
                             f"float. Received: stddev={stddev}")
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        return (self.mean + _truncated_normal(self._rng(), shape, self.stddev)).astype(dtype)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class VarianceScaling(Initializer):
    """Keras's ``VarianceScaling``: variance ``scale / n`` with ``n`` from ``mode``.

    ``mode`` is ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``; ``distribution`` is
    ``"truncated_normal"`` (stddev ``sqrt(scale/n)/0.8796``, cut at 2 stddevs),
    ``"untruncated_normal"`` or ``"uniform"`` (limit ``sqrt(3*scale/n)``).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if not float(scale) > 0:
            raise ValueError(f"Invalid value for argument `scale`: expected a positive float. "
                             f"Received: scale={scale}")
        if mode not in self._MODES:
            raise ValueError(f"Invalid value for argument `mode`: expected one of {self._MODES}. "
                             f"Received: mode={mode!r}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"Invalid value for argument `distribution`: expected one of "
                             f"{self._DISTRIBUTIONS}. Received: distribution={distribution!r}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        rng = self._rng()
        if self.distribution == "truncated_normal":
            values = _truncated_normal(rng, shape, math.sqrt(variance) / _TRUNCATED_STD)
        elif self.distribution == "untruncated_normal":
            values = rng.normal(0.0, math.sqrt(variance), size=shape)
        else:
            limit = math.sqrt(3.0 * variance)
            values = rng.uniform(-limit, limit, size=shape)
        return values.astype(dtype)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    """A VarianceScaling with fixed scale/mode/distribution (GlorotUniform, HeNormal, ...)."""

    _preset = None

    def __init__(self, seed=None):
        super().__init__(seed=seed, **self._preset)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """U(-limit, limit), ``limit = sqrt(6 / (fan_in + fan_out))`` (Keras's default)."""
    _preset = dict(scale=1.0, mode="fan_avg", distribution="uniform")


class GlorotNormal(_Preset):
    """Truncated normal, stddev ``sqrt(2 / (fan_in + fan_out))``."""
    _preset = dict(scale=1.0, mode="fan_avg", distribution="truncated_normal")


class HeUniform(_Preset):
    """U(-limit, limit), ``limit = sqrt(6 / fan_in)``."""
    _preset = dict(scale=2.0, mode="fan_in", distribution="uniform")


class HeNormal(_Preset):
    """Truncated normal, stddev ``sqrt(2 / fan_in)``."""
    _preset = dict(scale=2.0, mode="fan_in", distribution="truncated_normal")


class LecunUniform(_Preset):
    """U(-limit, limit), ``limit = sqrt(3 / fan_in)``."""
    _preset = dict(scale=1.0, mode="fan_in", distribution="uniform")


class LecunNormal(_Preset):
    """Truncated normal, stddev ``sqrt(1 / fan_in)`` (for SELU networks)."""
    _preset = dict(scale=1.0, mode="fan_in", distribution="truncated_normal")


class KaimingUniform(Initializer):
    """PyTorch's ``kaiming_uniform_(w, a)``: U(-bound, bound), ``bound = gain*sqrt(3/fan_in)``.

    ``gain = sqrt(2 / (1 + a**2))``.  With the default ``a = sqrt(5)`` this is PyTorch's
    default kernel initialisation for ``Linear``/``Conv2d``: ``bound = 1/sqrt(fan_in)``.
    """

    def __init__(self, a=math.sqrt(5.0), seed=None):
        super().__init__(seed)
        self.a = float(a)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        fan_in, _ = compute_fans(shape)
        gain = math.sqrt(2.0 / (1.0 + self.a ** 2))
        bound = gain * math.sqrt(3.0 / fan_in) if fan_in > 0 else 0.0
        return self._rng().uniform(-bound, bound, size=shape).astype(dtype)

    def get_config(self):
        return {"a": self.a, "seed": self.seed}


class FanInUniform(Initializer):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default bias for ``Linear``/``Conv2d``.

    ``fan_in`` is the fan-in of the layer's *kernel*, which the bias shape alone does not
    tell, so the layer passes it in.
    """

    def __init__(self, fan_in, seed=None):
        super().__init__(seed)
        if isinstance(fan_in, bool) or not isinstance(fan_in, (int, np.integer)) or fan_in < 0:
            raise ValueError(f"Invalid value for argument `fan_in`: expected a non-negative int. "
                             f"Received: fan_in={fan_in!r}")
        self.fan_in = int(fan_in)

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        bound = 1.0 / math.sqrt(self.fan_in) if self.fan_in > 0 else 0.0
        return self._rng().uniform(-bound, bound, size=shape).astype(dtype)

    def get_config(self):
        return {"fan_in": self.fan_in, "seed": self.seed}


class Orthogonal(Initializer):
    """Keras's ``Orthogonal(gain=1.0)``: a random (semi-)orthogonal matrix times ``gain``.

    The weight is read as a matrix ``(prod(shape[:-1]), shape[-1])`` and gets orthonormal
    columns (rows when it is wide): the QR factor of a standard normal matrix, signs fixed
    by ``diag(R)``, as Keras. For minnet's ``(out, in)`` layout a Dense kernel or recurrent
    weight ``(G*u, u)`` is then Keras's ``(u, G*u)`` kernel (orthonormal rows) transposed.

    Example:
        >>> w = Orthogonal()((4, 3)); np.allclose(w.T @ w, np.eye(3))
        True
    """

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        try:
            self.gain = float(gain)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `gain`: expected a float. "
                            f"Received: gain={gain!r}") from None

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        if len(shape) < 2:
            raise ValueError(f"Invalid value for argument `shape`: expected at least 2 dimensions "
                             f"for an orthogonal initializer. Received: shape={shape}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = self._rng().standard_normal((max(rows, cols), min(rows, cols)))
        # scipy's LAPACK (single-threaded here): numpy's threaded QR was seconds slower on a
        # busy machine for a (512, 128) matrix.
        q, r = scipy.linalg.qr(a, mode="economic")
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape).astype(dtype)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """Keras's ``Identity(gain=1.0)``: ``gain * eye(rows, cols)`` for 2-D weights only
    (minnet's ``(out, in)`` kernel is Keras's ``(in, out)`` one transposed, and
    ``eye(out, in) = eye(in, out).T``)."""

    def __init__(self, gain=1.0):
        super().__init__(None)
        try:
            self.gain = float(gain)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `gain`: expected a float. "
                            f"Received: gain={gain!r}") from None

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        if len(shape) != 2:
            raise ValueError(f"Invalid value for argument `shape`: the identity initializer needs "
                             f"a 2-D weight. Received: shape={shape}")
        return (self.gain * np.eye(*shape)).astype(dtype)

    def get_config(self):
        return {"gain": self.gain}


class STFT(Initializer):
    """Keras's ``STFT(side="real", window="hann", scaling="density", periodic=False)``: the
    real (``cos``) or imaginary (``sin``) part of the windowed DFT as a convolution kernel.

    ``kernel[t, c, k] = cos(-2 pi t k / n_fft) * w[t] / s`` (``sin`` for ``side="imag"``), with
    ``n_fft = 2 * (bins - 1)``, ``w`` the window (``scipy.signal.get_window(window,
    frame_length, periodic)``, an array of ``frame_length`` values, or None for ones) and ``s``
    its scale: ``sqrt(sum(w**2))`` for ``"density"``, ``sum(|w|)`` for ``"spectrum"``, 1 for
    None. The arithmetic follows Keras's in the requested dtype (so float32 kernels are Keras's
    to the last bits; ask for float64 for an accurate one).

    **Layout.** ``layout="keras"`` (the default) reads ``shape`` as Keras's
    ``(frame_length, channels, bins)`` and returns that layout, Keras's meaning. minnet's
    convolutions keep PyTorch's kernel layout ``(filters, in_channels, kernel_size)``, so
    ``Conv1D(bins, frame_length, kernel_initializer=STFT())`` would read its shape the wrong
    way round: give such a kernel ``STFT(..., layout="conv")``, which reads ``shape`` as
    ``(bins, channels, frame_length)`` and returns the transpose. ``layers.STFTSpectrogram``
    does this for its own kernels.
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False, *,
                 layout="keras"):
        super().__init__(None)
        if side not in ("real", "imag"):
            raise ValueError(f"Invalid value for argument `side`: expected 'real' or 'imag'. "
                             f"Received: side={side!r}")
        if isinstance(window, str):
            get_window(window, 1)       # raises on an unknown window name
        elif window is not None:
            window = np.asarray(window, dtype=np.float64)
            if window.ndim != 1:
                raise ValueError(f"Invalid value for argument `window`: expected a window name, "
                                 f"None or a 1-D array. Received: an array of shape {window.shape}")
        if scaling is not None and scaling not in ("density", "spectrum"):
            raise ValueError(f"Invalid value for argument `scaling`: expected None, 'density' or "
                             f"'spectrum'. Received: scaling={scaling!r}")
        if layout not in ("keras", "conv"):
            raise ValueError(f"Invalid value for argument `layout`: expected 'keras' "
                             f"(frame_length, channels, bins) or 'conv' (bins, channels, "
                             f"frame_length). Received: layout={layout!r}")
        self.side, self.window, self.scaling = side, window, scaling
        self.periodic, self.layout = bool(periodic), layout

    def __call__(self, shape, dtype=None):
        shape, dtype = _check_shape_dtype(shape, dtype)
        if len(shape) != 3:
            raise ValueError(f"Invalid value for argument `shape`: the STFT initializer needs a "
                             f"3-D kernel shape. Received: shape={shape}")
        frame_length, channels, bins = shape if self.layout == "keras" else shape[::-1]
        n_fft = dtype.type(2 * (bins - 1))
        freq = np.arange(bins, dtype=dtype).reshape(1, 1, bins) / n_fft
        time = np.arange(frame_length, dtype=dtype).reshape(frame_length, 1, 1)
        args = (dtype.type(-2) * time) * freq * np.arccos(dtype.type(-1))
        kernel = np.cos(args) if self.side == "real" else np.sin(args)
        if self.window is not None:
            win = self.window
            if isinstance(win, str):
                win = get_window(win, frame_length, self.periodic)
            win = np.asarray(win).astype(dtype)
            if win.shape != (frame_length,):
                raise ValueError(f"The shape of `window` must be equal to [frame_length] "
                                 f"({frame_length}). Received: window shape={win.shape}")
            win = win.reshape(frame_length, 1, 1)
            scale = (np.sqrt(np.sum(np.square(win))) if self.scaling == "density" else
                     np.sum(np.abs(win)) if self.scaling == "spectrum" else dtype.type(1))
            kernel = kernel * win / scale
        kernel = np.broadcast_to(kernel, (frame_length, channels, bins)).astype(dtype)
        return kernel if self.layout == "keras" else np.ascontiguousarray(kernel.transpose(2, 1, 0))

    def get_config(self):
        window = self.window.tolist() if isinstance(self.window, np.ndarray) else self.window
        config = {"side": self.side, "window": window, "periodic": self.periodic,
                  "scaling": self.scaling}
        if self.layout != "keras":
            config["layout"] = self.layout
        return config


# Keras's other spellings of the same classes.
OrthogonalInitializer, IdentityInitializer = Orthogonal, Identity
zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, glorot_uniform, glorot_normal = VarianceScaling, GlorotUniform, GlorotNormal
he_uniform, he_normal, lecun_uniform, lecun_normal = HeUniform, HeNormal, LecunUniform, LecunNormal
orthogonal, identity = Orthogonal, Identity
STFTInitializer = stft = STFT

_ALIASES = {
    Orthogonal: ("orthogonal", "orthogonal_initializer"),
    Identity: ("identity", "identity_initializer"),
    STFT: ("stft", "STFTInitializer"),
    Zeros: ("zeros", "zero"), Ones: ("ones", "one"), Constant: ("constant",),
    RandomUniform: ("random_uniform", "uniform"), RandomNormal: ("random_normal", "normal"),
    TruncatedNormal: ("truncated_normal",), VarianceScaling: ("variance_scaling",),
    GlorotUniform: ("glorot_uniform", "xavier_uniform"),
    GlorotNormal: ("glorot_normal", "xavier_normal"),
    HeUniform: ("he_uniform",), HeNormal: ("he_normal",), KaimingUniform: ("kaiming_uniform",),
    LecunUniform: ("lecun_uniform",), LecunNormal: ("lecun_normal",), FanInUniform: (),
}
for _cls, _names in _ALIASES.items():
    _registry.register("initializer", _cls, aliases=_names)


def checked_call(initializer, shape, dtype, where="the weight"):
    """Call ``initializer(shape, dtype)`` and return a NEW C-contiguous array of ``dtype``.

    The result is always a copy, so a weight never shares memory with an array a callable
    initializer returned (``kernel_initializer=lambda s, d: pretrained`` leaves
    ``pretrained`` untouched by training). A result of another shape, or not real-valued,
    raises a ValueError/TypeError naming ``where``.
    """
    shape = tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    value = initializer(shape, dtype)
    try:
        array = np.asarray(value.data if hasattr(value, "grad_fn") else value)
    except Exception:
        array = None
    if array is None or array.dtype.kind not in "fiub":
        raise TypeError(f"Initializer {initializer!r} for {where} returned "
                        f"{type(value).__name__}" + ("" if array is None else
                                                      f" of dtype {array.dtype}")
                        + "; expected a real-valued array.")
    if array.shape != shape:
        raise ValueError(f"Initializer {initializer!r} for {where} returned shape {array.shape}; "
                         f"expected {shape}.")
    return np.array(array, dtype=dtype, order="C", copy=True)


def get(identifier):
    """Resolve an initialiser from a name, a config dict, an Initializer or a callable.

    Args:
        identifier: ``"glorot_uniform"``, ``"he_normal"``, ``"zeros"``, ... (or a class
            name such as ``"GlorotUniform"``), a dict ``{"class_name": ..., "config": ...}``
            as ``serialize`` returns, an ``Initializer`` instance or class, or any callable
            ``(shape, dtype) -> ndarray``.

    Returns:
        A callable ``(shape, dtype) -> ndarray``.

    Raises:
        ValueError: unknown name.  TypeError: anything else.
    """
    if isinstance(identifier, Initializer) or (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _registry.lookup("initializer", identifier.strip(), argument="initializer")
        return cls() if isinstance(cls, type) else cls
    raise TypeError(f"Invalid value for argument `initializer`: expected a string, a dict, an "
                    f"Initializer or a callable (shape, dtype) -> ndarray. "
                    f"Received: initializer={identifier!r} of type {type(identifier).__name__}")


def serialize(initializer):
    """A JSON-able description of ``initializer`` (``None`` stays ``None``).

    Plain callables cannot be serialised; they are described as
    ``{"class_name": "callable", "config": {"name": ...}}`` and ``deserialize`` refuses them
    with a clear message.
    """
    if initializer is None:
        return None
    if isinstance(initializer, str):
        return initializer
    if isinstance(initializer, Initializer):
        return {"class_name": type(initializer).__name__, "config": initializer.get_config()}
    name = getattr(initializer, "__name__", type(initializer).__name__)
    return {"class_name": "callable", "config": {"name": name}}


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``."""
    if config is None or isinstance(config, str):
        return None if config is None else get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Invalid value for argument `config`: expected a dict with keys "
                         f"'class_name' and 'config'. Received: config={config!r}")
    name = config["class_name"]
    custom_objects = custom_objects or {}
    if name == "callable":
        fn_name = (config.get("config") or {}).get("name")
        if fn_name in custom_objects:
            return custom_objects[fn_name]
        raise ValueError(f"Cannot deserialize the initializer function {fn_name!r}: plain "
                         f"callables are not serializable. Pass it in `custom_objects` or use "
                         f"an Initializer subclass.")
    try:
        found = _registry.deserialize("initializer", config, custom_objects)
    except ValueError as exc:
        raise ValueError(f"Unknown initializer class {name!r}: {exc}") from None
    return found
