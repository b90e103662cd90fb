"""Synthetic long-memory sequence tasks, generated from a seed: the adding and copy problems.

* **adding** (Hochreiter & Schmidhuber 1997): each step has a random value in [0, 1) and
  a marker; exactly two steps are marked (one in each half) and the target is the sum of
  their values. Predicting the mean, 1.0, gives a mean squared error of about 1/6; a model
  must carry the marked values across up to ``seq_len`` steps to do better.
* **copy** (Graves et al. 2014; Arjovsky et al. 2016): ``copy_length`` random symbols
  (1..``n_symbols``), then ``seq_len`` blanks (0) and a delimiter (``n_symbols + 1``);
  after it the model must output the symbols again. Guessing scores
  ``copy_length * log(n_symbols) / (seq_len + 2 * copy_length)`` of cross-entropy per step.
"""
import numbers

import numpy as np

from minnet._checks import check_choice, check_int, invalid

__all__ = ["make_sequence_task"]


def make_sequence_task(task, n_samples=1000, seq_len=50, seed=None, copy_length=10,
                       n_symbols=8):
    """Generate a synthetic sequence task.

    Args:
        task: ``"adding"`` or ``"copy"``.
        n_samples: number of sequences (int >= 1).
        seq_len: ``"adding"``: the number of steps (>= 2); ``"copy"``: the number of blank
            steps between the symbols and the delimiter (the memory delay, >= 1).
        seed: int >= 0; the same seed gives the same data.
        copy_length: ``"copy"``: how many symbols to remember.
        n_symbols: ``"copy"``: size of the alphabet (symbols are 1..n_symbols).

    Returns:
        ``"adding"``: ``(x, y)`` with x float32 ``(n_samples, seq_len, 2)`` (value, marker)
        and y float32 ``(n_samples, 1)``.
        ``"copy"``: ``(x, y)`` int64 ``(n_samples, seq_len + 2 * copy_length)``; x holds the
        symbols, the blanks and the delimiter; y is 0 except the last ``copy_length``
        steps, which hold the symbols.

    Example:
        >>> x, y = make_sequence_task("adding", 4, seq_len=20, seed=0)
        >>> x.shape, y.shape
        ((4, 20, 2), (4, 1))
    """
    check_choice("task", task, ("adding", "copy"))
    n_samples = check_int("n_samples", n_samples, minimum=1)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                             or seed < 0):
        raise invalid("seed", "None or an int >= 0", seed)
    rng = np.random.default_rng(seed)
    if task == "adding":
        seq_len = check_int("seq_len", seq_len, minimum=2)
        values = rng.random((n_samples, seq_len))
        half = seq_len // 2
        first = rng.integers(0, half, size=n_samples)
        second = rng.integers(half, seq_len, size=n_samples)
        markers = np.zeros((n_samples, seq_len))
        rows = np.arange(n_samples)
        markers[rows, first] = 1.0
        markers[rows, second] = 1.0
        x = np.stack([values, markers], axis=-1).astype(np.float32)
        y = (values[rows, first] + values[rows, second]).astype(np.float32)[:, None]
        return x, y
    seq_len = check_int("seq_len", seq_len, minimum=1)
    copy_length = check_int("copy_length", copy_length, minimum=1)
    n_symbols = check_int("n_symbols", n_symbols, minimum=1)
    total = seq_len + 2 * copy_length
    symbols = rng.integers(1, n_symbols + 1, size=(n_samples, copy_length))
    x = np.zeros((n_samples, total), np.int64)
    y = np.zeros((n_samples, total), np.int64)
    x[:, :copy_length] = symbols
    x[:, copy_length + seq_len - 1] = n_symbols + 1       # the delimiter: "now repeat"
    y[:, -copy_length:] = symbols
    return x, y
