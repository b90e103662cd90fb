"""Small helpers shared by several minnet modules."""
import difflib
import os
import sys
import warnings


def did_you_mean(name, candidates):
    """A " Did you mean 'x'?" hint for an unknown name, or ``""`` when nothing is close.

    The comparison ignores case, so ``"dens"`` still suggests ``"Dense"``; the suggestion
    is spelled as in ``candidates``.

    Args:
        name: the name that was not found (anything; non-strings give ``""``).
        candidates: the valid names (an iterable of str).

    Returns:
        ``" Did you mean 'adam'?"`` (leading space, ready to append to a message) or ``""``.

    Example:
        >>> did_you_mean("adamm", ["sgd", "adam", "rmsprop"])
        " Did you mean 'adam'?"
    """
    if not isinstance(name, str):
        return ""
    by_lower = {}
    for candidate in candidates:
        if isinstance(candidate, str):
            by_lower.setdefault(candidate.lower(), candidate)
    typed = name.lower()
    # Fewest edits first (a swap of two neighbours counts as one: "adma" is one edit from
    # "adam", three from "adamax"), then difflib's similarity to break ties.
    scored = sorted((_edit_distance(typed, key), -difflib.SequenceMatcher(None, typed, key).ratio(), key)
                    for key in by_lower)
    if scored and scored[0][0] <= max(1, len(typed) // 3):
        return f" Did you mean {by_lower[scored[0][2]]!r}?"
    matches = difflib.get_close_matches(typed, list(by_lower), n=1, cutoff=0.6)
    return f" Did you mean {by_lower[matches[0]]!r}?" if matches else ""


def _edit_distance(a, b):
    """Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
    two neighbouring characters, each costing one."""
    previous2, previous = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel():
    """The ``stacklevel`` (for a ``warnings.warn`` in the caller) of the first frame outside minnet.

    Counting frames by hand breaks as soon as a wrapper or a helper sits between the user's
    line and the warning; walking the stack to the first frame outside the package does not.
    """
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def warn(message, category=UserWarning):
    """``warnings.warn`` pointing at the user's line (the first caller outside minnet)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
