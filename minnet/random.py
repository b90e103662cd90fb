"""``minnet.random``: Keras 3's ``keras.random`` (``normal``, ``uniform``, ``dropout``,
``shuffle``, ``SeedGenerator``...), counter-based.

Every draw is made by NumPy's Philox generator keyed by a ``(seed, counter)`` pair, so the
numbers depend only on that pair, never on the thread count or on what else drew before.
The pair comes from the ``seed`` argument:

* an int: always the same pair, so the same numbers on every call (as Keras);
* a ``SeedGenerator``: its ``(seed, counter)`` state; each draw advances the counter;
* None: minnet's global stream (``mn.manual_seed`` / ``mn.utils.set_random_seed`` reset
  it), advanced by one per draw.

Example:
    >>> from minnet import random
    >>> seed = random.SeedGenerator(42)
    >>> random.normal((2, 3), seed=seed).shape
    (2, 3)
"""
import numpy as np

from minnet import config
from minnet._random import dropout_key
from minnet.autograd import Tensor

from .ops._dispatch import convert, standardize_dtype, to_float

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "categorical", "dropout",
           "shuffle", "gamma", "binomial", "beta", "draw_seed"]

_MASK32 = 0xFFFFFFFF


def _check_seed_int(seed, name="seed"):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"Invalid argument `{name}`: expected None, a non-negative int or a SeedGenerator. "
                         f"Received: {name}={seed!r}")
    return int(seed)


class SeedGenerator:
    """A stateful source of seeds: ``state`` holds ``[seed, counter]`` (uint32) and every
    draw that uses the generator advances the counter by one.

    Args:
        seed: initial seed (an int >= 0) or None (drawn from minnet's global stream, so
            reproducible after ``mn.manual_seed``).
        name: optional name.
    """

    def __init__(self, seed=None, name=None, **kwargs):
        kwargs.pop("backend", None)
        if kwargs:
            raise TypeError(f"SeedGenerator() got unexpected keyword arguments: {sorted(kwargs)}")
        if seed is None:
            global_seed, offset = dropout_key(1)
            seed = int(np.random.SeedSequence([global_seed & _MASK32, offset & _MASK32]).generate_state(1)[0])
        self._initial_seed = _check_seed_int(seed)
        self.name = name or "seed_generator"
        self._state = np.array([self._initial_seed & _MASK32, 0], dtype=np.uint32)

    @property
    def state(self):
        """``[seed, counter]`` as a uint32 tensor (assign a new one with ``state.assign``-free
        ``set_state``)."""
        return Tensor(self._state.copy())

    def set_state(self, state):
        self._state = np.asarray(convert(state).data, dtype=np.uint32).reshape(2).copy()

    def next(self, ordered=True):
        """The current ``(seed, counter)`` pair; advances the counter."""
        pair = (int(self._state[0]), int(self._state[1]))
        self._state[1] = np.uint32((pair[1] + 1) & _MASK32)
        return pair

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<SeedGenerator seed={self._initial_seed} counter={int(self._state[1])}>"


def draw_seed(seed):
    """The ``(seed, counter)`` pair a draw with this ``seed`` argument uses."""
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        global_seed, offset = dropout_key(1)
        return (global_seed & 0xFFFFFFFFFFFFFFFF) | (1 << 64), offset       # its own key space
    if isinstance(seed, Tensor) or isinstance(seed, np.ndarray):
        values = np.asarray(convert(seed).data).reshape(-1)
        return (int(values[0]), int(values[1]) if values.size > 1 else 0)
    return _check_seed_int(seed), 0


def _generator(seed):
    key, counter = draw_seed(seed)
    return np.random.Generator(np.random.Philox(key=int(key), counter=int(counter) << 128))


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        out = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid argument `shape`: expected a tuple of non-negative ints. Received: shape={shape!r}") \
            from None
    if any(s < 0 for s in out):
        raise ValueError(f"Invalid argument `shape`: expected non-negative sizes. Received: shape={shape!r}")
    return out


def _float_dtype(dtype):
    dtype = np.dtype(standardize_dtype(dtype if dtype is not None else config.floatx()))
    if dtype.kind != "f":
        raise ValueError(f"Invalid argument `dtype`: expected a float dtype. Received: dtype={dtype.name!r}")
    return dtype


def _value(v):
    return convert(v).data if isinstance(v, (Tensor, np.ndarray, list, tuple)) else v


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of N(mean, stddev²)."""
    dtype = _float_dtype(dtype)
    draws = _generator(seed).standard_normal(_shape(shape))
    return Tensor((draws * _value(stddev) + _value(mean)).astype(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of U[minval, maxval)."""
    dtype = _float_dtype(dtype)
    lo, hi = _value(minval), _value(maxval)
    draws = _generator(seed).random(_shape(shape))
    return Tensor((lo + (hi - lo) * draws).astype(dtype))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev²) restricted to within two standard deviations (redrawn outside)."""
    dtype = _float_dtype(dtype)
    shape = _shape(shape)
    rng = _generator(seed)
    draws = rng.standard_normal(shape)
    bad = np.abs(draws) > 2
    while bad.any():
        draws[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(draws) > 2
    return Tensor((draws * _value(stddev) + _value(mean)).astype(dtype))


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform on ``[minval, maxval)``."""
    dtype = np.dtype(standardize_dtype(dtype))
    if dtype.kind not in "iu":
        raise ValueError(f"Invalid argument `dtype`: expected an integer dtype. Received: dtype={dtype.name!r}")
    lo, hi = int(_value(minval)), int(_value(maxval))
    if hi <= lo:
        raise ValueError(f"Invalid arguments `minval`/`maxval`: expected minval < maxval. "
                         f"Received: minval={minval}, maxval={maxval}")
    return Tensor(_generator(seed).integers(lo, hi, _shape(shape)).astype(dtype))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """``num_samples`` class indices per row of the ``(batch, classes)`` ``logits``."""
    logits = to_float(convert(logits)).data.astype(np.float64)
    if logits.ndim != 2:
        raise ValueError(f"Invalid argument `logits`: expected a 2-D tensor (batch, classes). "
                         f"Received: shape {logits.shape}")
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = _generator(seed).random((logits.shape[0], int(num_samples)))
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    out = np.stack([np.searchsorted(row, draws, side="right") for row, draws in zip(cdf, u)])
    return Tensor(np.minimum(out, logits.shape[1] - 1).astype(np.dtype(standardize_dtype(dtype))))


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zero each entry with probability ``rate``, scale the others by ``1 / (1 - rate)``
    (differentiable in ``inputs``; ``noise_shape`` broadcasts one mask)."""
    if isinstance(rate, bool) or not 0 <= float(rate) < 1:
        raise ValueError(f"Invalid value for argument `rate`: expected a float in [0, 1). Received: rate={rate!r}")
    x = to_float(convert(inputs))
    if float(rate) == 0:
        return x
    shape = tuple(x.shape) if noise_shape is None else tuple(
        x.shape[i] if s is None else int(s) for i, s in enumerate(noise_shape))
    keep = _generator(seed).random(shape) >= float(rate)
    return x * Tensor((keep / (1.0 - float(rate))).astype(x.dtype))


def shuffle(x, axis=0, seed=None):
    """``x`` with its entries along ``axis`` in a random order (differentiable)."""
    x = convert(x)
    axis = int(axis) % max(x.ndim, 1)
    order = _generator(seed).permutation(x.shape[axis])
    return x.index_select(axis, Tensor(order.astype(np.int64)))


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, 1) samples."""
    dtype = _float_dtype(dtype)
    return Tensor(_generator(seed).standard_gamma(_value(alpha), _shape(shape)).astype(dtype))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial(counts, probabilities) samples (float dtype, as Keras)."""
    dtype = _float_dtype(dtype)
    counts, probabilities = _value(counts), _value(probabilities)
    if np.any(np.asarray(probabilities) < 0) or np.any(np.asarray(probabilities) > 1):
        raise ValueError(f"Invalid argument `probabilities`: expected values in [0, 1]. "
                         f"Received: probabilities={probabilities}")
    draws = _generator(seed).binomial(np.asarray(counts).astype(np.int64), probabilities, _shape(shape))
    return Tensor(draws.astype(dtype))


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta(alpha, beta) samples."""
    dtype = _float_dtype(dtype)
    return Tensor(_generator(seed).beta(_value(alpha), _value(beta), _shape(shape)).astype(dtype))
