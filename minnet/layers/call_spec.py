"""What a layer's ``call`` and ``build`` accept, read once per class (Keras's ``CallSpec``).

Keras passes ``training`` and ``mask`` to a ``call`` only when its signature declares them,
binds the other arguments by name, and calls ``build`` with the shapes of the tensor
arguments: ``build(input_shape)`` (one parameter) gets the first one; a ``build`` with
several parameters gets them by name, each ``<argument>_shape`` matching an argument of
``call`` (``build(self, query_shape, value_shape)`` for ``call(self, query, value)``).
``compute_output_shape`` is matched the same way.
"""
import inspect

import numpy as np

from minnet.autograd import Tensor
from minnet.ops.symbolic import KerasTensor

__all__ = ["CallInfo", "CALL_INFO", "call_info", "bind", "is_tensor_like", "shape_of", "shapes_dict",
           "shapes_for"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class CallInfo:
    """The parameters of one class's ``call``.

    Attributes:
        names: every named parameter, in order (``self`` excluded).
        positional: the parameters that take a positional argument, in order.
        training, mask: whether ``call`` declares them (or takes ``**kwargs``).
        var_positional, var_keyword: the names of ``*args`` / ``**kwargs`` (or None).
        first: the name of the main input (the first parameter).
    """

    __slots__ = ("names", "positional", "training", "mask", "var_positional", "var_keyword",
                 "first", "plain", "argument_masks")

    def __init__(self, function, custom_mask=False):
        try:
            parameters = list(inspect.signature(function).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        self.names = [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        self.positional = [p.name for p in parameters if p.kind in _POSITIONAL]
        self.var_positional = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
        self.var_keyword = next((p.name for p in parameters if p.kind == p.VAR_KEYWORD), None)
        self.training = "training" in self.names
        self.mask = "mask" in self.names
        self.first = self.positional[0] if self.positional else (self.var_positional or "inputs")
        # A call with no mask parameter on a class without its own compute_mask: the layer's
        # fast path (one Tensor in, nothing but `training` given) applies.
        # `<argument>_mask` parameters (query_mask for query, ...): Keras fills them from
        # the arguments' masks.
        self.argument_masks = {n for n in self.names
                               if n.endswith("_mask") and n[:-len("_mask")] in self.names}
        self.plain = not self.mask and not custom_mask and not self.argument_masks


CALL_INFO = {}     # class -> CallInfo


def call_info(layer):
    """The ``CallInfo`` of ``layer.call`` (cached per class)."""
    cls = type(layer)
    info = CALL_INFO.get(cls)
    if info is None:
        # Layer.compute_mask carries `keras_default`; a class that overrides it computes masks.
        custom_mask = not getattr(cls.compute_mask, "keras_default", False)
        info = CALL_INFO[cls] = CallInfo(cls.call.__get__(layer, cls), custom_mask=custom_mask)
    return info


def is_tensor_like(value):
    """A Tensor, ndarray or KerasTensor, or a non-empty list/tuple/dict of them."""
    if isinstance(value, (Tensor, np.ndarray, KerasTensor)):
        return True
    if isinstance(value, dict):
        return bool(value) and all(is_tensor_like(v) or v is None for v in value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(is_tensor_like(v) or v is None for v in value) and \
            any(v is not None for v in value)
    return False


def shape_of(value):
    """The shape of a tensor, or the structure of shapes of a list/dict of them."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: shape_of(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shape_of(v) for v in value]
    return tuple(value.shape)


def bind(info, args, kwargs):
    """``{parameter name: value}`` for the arguments given (positional ones first)."""
    bound = {}
    for i, value in enumerate(args):
        if i < len(info.positional):
            bound[info.positional[i]] = value
        else:
            bound.setdefault(info.var_positional or "args", []).append(value)
    bound.update(kwargs)
    return bound


def shapes_dict(bound):
    """``{"<name>_shape": shape}`` for every tensor argument except masks and catch-alls."""
    return {f"{name}_shape": shape_of(value) for name, value in bound.items()
            if name not in ("mask", "args", "kwargs") and is_tensor_like(value)}


_TARGET_PARAMS = {}


def _target_params(function):
    key = getattr(function, "__func__", function)
    names = _TARGET_PARAMS.get(key)
    if names is None:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            parameters = ()
        names = _TARGET_PARAMS[key] = [p.name for p in parameters if p.kind in _POSITIONAL
                                       or p.kind == p.KEYWORD_ONLY]
    return names


def shapes_for(target, shapes, info, class_name):
    """The keyword arguments for ``build`` / ``compute_output_shape`` (Keras's rule).

    One parameter: the first tensor argument's shape, whatever the parameter's name.
    Several: each must be ``<argument>_shape`` for an argument of ``call``.

    Raises:
        ValueError: a parameter of ``target`` that matches no argument of ``call``.
    """
    names = _target_params(target)
    if len(names) <= 1:
        if not names:
            return {}
        return {names[0]: next(iter(shapes.values()), None)}
    method = getattr(target, "__name__", "build")
    result = {}
    for name in names:
        preamble = (f"For a `{method}()` method with more than one argument, all arguments should "
                    f"have a `_shape` suffix and match an argument from `call()`. E.g. "
                    f"`{method}(self, foo_shape, bar_shape)`.")
        if not name.endswith("_shape"):
            raise ValueError(f"{preamble} For layer '{class_name}', received `{method}()` argument "
                             f"`{name}`, which does not end in `_shape`.")
        if name[:-len("_shape")] not in info.names:
            raise ValueError(f"{preamble} For layer '{class_name}', received `{method}()` argument "
                             f"`{name}`, but `call()` does not have argument "
                             f"`{name[:-len('_shape')]}`.")
        if name in shapes:
            result[name] = shapes[name]
    return result
