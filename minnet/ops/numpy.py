"""``keras.ops.numpy``: the NumPy-like ops, gathered from the modules that implement them
(``_np_math``: elementwise; ``_np_reduce``: reductions and sorting; ``_np_shape``: shapes,
indexing, creation; ``_np_products``: matmul, einsum and friends)."""
from ._np_math import *  # noqa: F401,F403
from ._np_math import __all__ as _math_names
from ._np_products import *  # noqa: F401,F403
from ._np_products import __all__ as _product_names
from ._np_reduce import *  # noqa: F401,F403
from ._np_reduce import __all__ as _reduce_names
from ._np_shape import *  # noqa: F401,F403
from ._np_shape import __all__ as _shape_names
from .core import map as _map_leading
from .linalg import slogdet  # noqa: F401


def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` mapped over the leading axis of its tensor arguments (stacked results).

    Only ``signature=None``-style elementwise use over one leading axis is supported.
    """
    excluded = set(excluded or ())
    if signature is not None:
        raise ValueError("Invalid argument `signature`: minnet's vectorize maps over the leading axis only. "
                         f"Received: signature={signature!r}")

    def vectorized(*args):
        mapped = [i for i in range(len(args)) if i not in excluded]

        def one(slices):
            full = list(args)
            for i, v in zip(mapped, slices):
                full[i] = v
            return pyfunc(*full)

        return _map_leading(one, [args[i] for i in mapped])

    return vectorized


__all__ = sorted(set(_math_names + _product_names + _reduce_names + _shape_names + ["slogdet", "vectorize"]))
