"""minnet's one source of randomness: ``manual_seed`` seeds initialisation, dropout and shuffling.

* ``generator()`` is a ``numpy.random.Generator`` (PCG64) used for weight
  initialisation and data shuffling.  minnet never touches NumPy's global RNG.
* Dropout masks come from a counter-based hash keyed by ``(seed, offset, index)``;
  ``dropout_key(n)`` hands out the key for a mask of ``n`` elements and advances the
  offset by ``n``, so a mask depends only on the seed and on how many random numbers
  were drawn before it, never on the thread count.
* A layer given its own ``seed`` (Keras's ``Dropout(rate, seed=...)``) draws its masks from
  a ``DropoutStream`` instead: the same hash keyed by the layer's seed and its own offset,
  inside ``drawing_from(stream)``; ``manual_seed`` does not touch it.
"""
import numpy as np

_DEFAULT_SEED = 0x5EED

_state = {"seed": _DEFAULT_SEED, "generator": np.random.default_rng(_DEFAULT_SEED), "offset": 0}


def manual_seed(seed):
    """Seed all of minnet's randomness (initialisation, dropout, shuffling).

    Args:
        seed: a non-negative int.

    Example:
        >>> import minnet as mn
        >>> mn.manual_seed(0)
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"Invalid argument `seed`: expected a non-negative int. Received: seed={seed!r}")
    seed = int(seed)
    _state["seed"] = seed
    _state["generator"] = np.random.default_rng(seed)
    _state["offset"] = 0


def initial_seed():
    """The seed last given to ``manual_seed``."""
    return _state["seed"]


def generator():
    """The ``numpy.random.Generator`` behind initialisation and shuffling."""
    return _state["generator"]


def dropout_key(n_elements):
    """Return ``(seed, offset)`` for a mask of ``n_elements`` and advance the offset.

    After ``set_sample_window((start, n_local, n_global))`` (data parallelism: this process holds
    samples ``start .. start + n_local`` of a global batch of ``n_global``), a mask whose size
    is a multiple of ``n_local`` gets the key of those samples' part of the global batch's
    mask and the offset advances by the global mask's size, so every sample is dropped as it
    would be in one process.
    """
    seed = _state["seed"] & 0xFFFFFFFFFFFFFFFF
    offset = _state["offset"]
    window = _state.get("window")
    if window is not None and window[1] and n_elements % window[1] == 0:
        per_sample = n_elements // window[1]
        _state["offset"] = (offset + per_sample * window[2]) & 0xFFFFFFFFFFFFFFFF
        return seed, (offset + per_sample * window[0]) & 0xFFFFFFFFFFFFFFFF
    _state["offset"] = (offset + int(n_elements)) & 0xFFFFFFFFFFFFFFFF
    return seed, offset


class DropoutStream:
    """A layer's own dropout key stream: ``(seed, offset)`` advanced by each mask it draws,
    independent of ``manual_seed`` (Keras's per-layer ``SeedGenerator(seed)``)."""

    __slots__ = ("seed", "offset")

    def __init__(self, seed):
        self.seed, self.offset = int(seed) & 0xFFFFFFFFFFFFFFFF, 0


class drawing_from:
    """``with drawing_from(stream): F.dropout(...)``: the masks drawn inside come from
    ``stream`` (its offset advances); the global stream is left where it was; with
    ``stream=None`` (a layer without a seed) it changes nothing.  The sample window of data
    parallelism applies as to the global stream.  (A class, not a generator: it sits on
    every seeded dropout call.)"""

    __slots__ = ("stream", "saved")

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            self.saved = _state["seed"], _state["offset"]
            _state["seed"], _state["offset"] = self.stream.seed, self.stream.offset

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.offset = _state["offset"]
            _state["seed"], _state["offset"] = self.saved
        return False


def stream_for(seed):
    """A layer's own ``DropoutStream`` for Keras's ``seed=`` (an int >= 0), or None for None."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"Invalid value for argument `seed`: expected None or an int >= 0. "
                         f"Received: seed={seed!r}")
    return DropoutStream(int(seed))


def dropout_offset():
    """How many mask elements have been handed out since ``manual_seed``."""
    return _state["offset"]


def set_dropout_offset(offset):
    """Continue the dropout stream at ``offset`` (data parallelism: where the ranks agree)."""
    _state["offset"] = int(offset) & 0xFFFFFFFFFFFFFFFF


def set_sample_window(window):
    """``(start, n_local, n_global)`` of this process's samples in the global batch, or None."""
    _state["window"] = window


def get_state():
    """Everything needed to continue the same random stream (for checkpoints)."""
    return {"seed": _state["seed"], "offset": _state["offset"],
            "generator": _state["generator"].bit_generator.state}


def state_problem(state):
    """What is wrong with ``state`` as a ``get_state()`` result, or None when it can be restored
    exactly (the one check for model files and backups)."""
    if not isinstance(state, dict):
        return "must be a dict with 'seed', 'offset' and 'generator'"
    for key in ("seed", "offset"):
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"needs a non-negative int {key!r} (got {value!r})"
    try:
        np.random.default_rng().bit_generator.state = state.get("generator")
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as error:
        return f"has an invalid 'generator' state ({type(error).__name__}: {error})"
    return None


def set_state(state):
    """Restore a state returned by ``get_state`` (checked first: ValueError, nothing changed)."""
    problem = state_problem(state)
    if problem is not None:
        raise ValueError(f"Invalid value for argument `state`: the random state {problem}.")
    _state["seed"] = int(state["seed"])
    _state["offset"] = int(state["offset"])
    g = np.random.default_rng()
    g.bit_generator.state = state["generator"]
    _state["generator"] = g
