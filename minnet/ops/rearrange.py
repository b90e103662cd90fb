"""``ops.rearrange``: einops-style axis rearrangement (``"b h w c -> b (h w) c"``).

Grouping with parentheses on either side, ``axes_lengths`` for split axes, and the
ellipsis are supported; it is a reshape, a transpose and a reshape, so differentiable.
"""
import numpy as np

from ._dispatch import keras_op

__all__ = ["rearrange"]


def _parse(side):
    groups, current = [], None
    tokens = side.replace("(", " ( ").replace(")", " ) ").split()
    for token in tokens:
        if token == "(":
            current = []
        elif token == ")":
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    return groups


@keras_op("tensor")
def rearrange(tensor, pattern, **axes_lengths):
    if "->" not in pattern:
        raise ValueError(f"Invalid argument `pattern`: expected 'inputs -> outputs'. Received: pattern={pattern!r}")
    left, right = (_parse(s) for s in pattern.split("->"))
    if any("..." in g for g in left):
        n_ellipsis = tensor.ndim - (len(left) - 1)
        names = [f"_e{i}" for i in range(n_ellipsis)]
        left = sum(([[n] for n in names] if g == ["..."] else [g] for g in left), [])
        right = sum(([[n] for n in names] if g == ["..."] else [g] for g in right), [])
    if len(left) != tensor.ndim:
        raise ValueError(f"Invalid argument `pattern`: its input side has {len(left)} axes, the tensor "
                         f"{tensor.ndim}. Received: pattern={pattern!r}, shape {tensor.shape}")
    sizes = dict((k, int(v)) for k, v in axes_lengths.items())
    for group, size in zip(left, tensor.shape):
        unknown = [n for n in group if n not in sizes]
        known = int(np.prod([sizes[n] for n in group if n in sizes]))
        if len(unknown) > 1:
            raise ValueError(f"Invalid argument `axes_lengths`: cannot infer the sizes of {unknown}.")
        if unknown:
            sizes[unknown[0]] = size // known
    flat_left = [n for g in left for n in g]
    flat_right = [n for g in right for n in g]
    if sorted(flat_left) != sorted(flat_right):
        raise ValueError(f"Invalid argument `pattern`: both sides must name the same axes. Received: {pattern!r}")
    x = tensor.reshape(*[sizes[n] for n in flat_left])
    x = x.permute(*[flat_left.index(n) for n in flat_right]) if x.ndim > 1 else x
    return x.reshape(*[int(np.prod([sizes[n] for n in g])) for g in right])
