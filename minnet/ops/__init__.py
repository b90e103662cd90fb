"""``minnet.ops``: Keras 3's ``keras.ops`` over minnet's autograd.

``from minnet import ops`` and write Keras 3 code: ``ops.matmul``, ``ops.mean``,
``ops.one_hot``, ``ops.softmax``... with Keras's argument names, defaults, broadcasting and
dtype promotion (``ops.result_type``). Each op accepts NumPy arrays, ``mn.Tensor`` and
Python numbers, returns an ``mn.Tensor``, and is differentiable through the autograd where
Keras's is. Submodules as in Keras: ``ops.numpy``, ``ops.nn``, ``ops.linalg``,
``ops.image``, ``ops.core``, ``ops.math``. What exists and what does not: docs/ops.md.

Example:
    >>> import numpy as np
    >>> from minnet import ops
    >>> x = ops.convert_to_tensor(np.ones((2, 3), "float32"))
    >>> ops.mean(ops.matmul(x, ops.transpose(x)), axis=-1).shape
    (2,)
"""
from . import core, image, linalg, math, nn, numpy  # noqa: F401
from ._dispatch import result_type  # noqa: F401
from .core import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .numpy import *  # noqa: F401,F403
from .rearrange import rearrange  # noqa: F401
from . import symbolic as _symbolic

# The operators of a symbolic tensor beyond + - * / record these ops (Keras 3's KerasTensor).
_symbolic.set_operator_ops({name: globals()[name] for name in (
    "add", "subtract", "multiply", "divide", "negative", "matmul", "power", "floor_divide", "mod", "less", "less_equal", "greater", "greater_equal",
    "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "absolute",
    "get_item", "round")})
