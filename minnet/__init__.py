"""minnet: a small, fast deep-learning framework for coursework.

Typed Cython kernels (im2col + BLAS convolution, activations, dropout, batch norm,
pooling, fused losses) under a small, readable autograd and a Keras-style API. Images
are channels_last ``(N, H, W, C)`` by default, as in Keras:

>>> import minnet as mn
>>> from minnet import layers
>>> mn.utils.set_random_seed(0)
>>> (x, y), (x_test, y_test) = mn.datasets.load_digits()
>>> x.shape
(1437, 8, 8, 1)
>>> model = mn.Sequential([
...     layers.Flatten(),
...     layers.Dense(64, activation="relu"),
...     layers.Dense(10),                      # logits
... ])
>>> loss = mn.losses.SparseCategoricalCrossentropy(from_logits=True)
>>> model.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
>>> history = model.fit(x, y, epochs=5, batch_size=32, verbose=0)
>>> test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)
>>> test_acc > 0.85
True
"""
import importlib as _importlib

from ._version import __version__  # noqa: E402

try:
    from ._ext import _openmp  # noqa: F401  (the compiled kernels)
except ImportError as _err:  # pragma: no cover - depends on how minnet was installed
    raise ImportError(
        f"minnet's compiled kernels were not found in {__path__[0]}/_ext ({_err}). Install minnet "
        f"with `pip install .` (or build in place: `python setup.py build_ext --inplace`). If you "
        f"are inside minnet's source checkout, Python may be importing that folder instead of the "
        f"installed package: run from another directory.") from None

from ._config import get_num_threads, set_num_threads, show_config  # noqa: E402
from ._random import manual_seed  # noqa: E402
from .autograd import (AnomalyError, Function, GradcheckError, detect_anomaly, Parameter, Tensor, enable_grad,  # noqa: E402
                       gradcheck, graph_to_dot, is_grad_enabled, no_grad, print_graph,
                       set_grad_enabled, tensor)
from .autograd.creation import (arange, argmax, argmin, bmm, cat, chunk, clamp, concat, cumsum, einsum,  # noqa: E402
                                empty, empty_like, eye, flip, from_numpy, full, full_like, gather, index_select,
                                is_tensor, linspace, log_softmax, logsumexp, masked_fill, matmul, maximum, minimum,
                                norm, numel, ones, ones_like, permute, prod, rand, rand_like, randint, randint_like,
                                randn, randn_like, softmax, sort, split, squeeze, stack, std, topk, unsqueeze, var,
                                where, zeros, zeros_like)

# Resolve the thread count now, so scipy's BLAS is pinned to one thread per caller before
# any kernel (even one called directly from minnet._ext) runs GEMMs inside OpenMP threads.
get_num_threads()

_SUBMODULES = {"layers", "losses", "optimizers", "callbacks", "metrics", "datasets", "data",
               "functional", "initializers", "activations", "models", "saving", "autograd",
               "interop", "utils", "config", "trainers", "regularizers", "constraints"}
_SUBMODULES |= {"ops", "random", "distribution"}
_LAZY = {
    "Sequential": ("models", "Sequential"),
    "Model": ("models", "Model"),
    "Input": ("layers", "Input"),
    "Variable": ("layers.variable", "Variable"),
    "load_model": ("models", "load_model"),
    "register_layer": ("layers", "register_layer"),
    "buffer_cache": ("_ext._memory", "buffer_cache"),
}


def __getattr__(name):
    # Submodules load on first use: `import minnet` stays fast and light.
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(_importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module 'minnet' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _SUBMODULES | set(_LAZY))


__all__ = ["__version__", "Tensor", "Parameter", "tensor", "Function", "no_grad", "enable_grad",
           "is_grad_enabled", "set_grad_enabled", "gradcheck", "GradcheckError", "print_graph",
           "graph_to_dot", "detect_anomaly", "AnomalyError", "manual_seed", "set_num_threads", "get_num_threads", "show_config",
           "Sequential", "Model", "Input", "load_model", "register_layer", "buffer_cache",
           "zeros", "ones", "full", "empty", "rand", "randn", "randint", "arange", "linspace", "eye",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
           "from_numpy", "cat", "concat", "stack", "where", "einsum", "matmul", "bmm", "gather", "index_select",
           "masked_fill", "split", "chunk", "squeeze", "unsqueeze", "permute", "flip", "var", "std", "prod",
           "norm", "logsumexp", "cumsum", "softmax", "log_softmax", "maximum", "minimum", "clamp", "argmax",
           "argmin", "sort", "topk", "is_tensor", "numel"] + sorted(_SUBMODULES)
