"""The functional-API side of a layer: called on symbolic tensors, it records a graph node.

``Layer`` inherits ``SymbolicLayer``. A call on ``KerasTensor``s (from ``mn.Input``) builds
the layer for their shapes, infers the output and records a ``Node``
(``minnet/ops/symbolic.py``): by ``compute_output_shape`` when the layer has a formula, else
by running the layer on zero-filled placeholders (eval mode, no graph). The first node
recorded gives Keras's ``layer.input`` / ``layer.output`` / ``input_shape`` / ``output_shape``.
"""
import numpy as np

from minnet.autograd import Tensor, no_grad
from minnet.layers import call_spec
from minnet.layers._layout import check_user_layout
from minnet.layers.call_context import call_context
from minnet.ops import symbolic

__all__ = ["SymbolicLayer", "specs_from_shapes"]


def specs_from_shapes(output, dtype):
    """``(shape, dtype)`` spec(s) from what ``compute_output_shape`` returned."""
    if isinstance(output, (list, tuple)) and output and all(
            s is None or isinstance(s, (int, np.integer)) for s in output):
        return (tuple(None if s is None else int(s) for s in output), np.dtype(dtype))
    if isinstance(output, (tuple, list)) and not output:
        return ((), np.dtype(dtype))
    if isinstance(output, dict):
        return {key: specs_from_shapes(value, dtype) for key, value in output.items()}
    return [specs_from_shapes(shape, dtype) for shape in output]


def _mask_tensors(specs):
    """Boolean KerasTensors (no node: a description) for mask specs, structure kept."""
    if isinstance(specs, tuple) and len(specs) == 2 and isinstance(specs[1], np.dtype):
        return symbolic.KerasTensor(specs[0], dtype=bool, name="keras_mask")
    if isinstance(specs, dict):
        return {key: _mask_tensors(value) for key, value in specs.items()}
    return [_mask_tensors(value) for value in specs]


class SymbolicLayer:
    """Mixin of ``Layer``: the symbolic call, the graph views and the default output shape."""

    def _symbolic_call(self, args, kwargs, training=None, mask=None):
        """Record this layer called on symbolic tensors: build it for their shapes, infer the
        output (``compute_output_shape`` when the layer has one, else by running it on
        placeholders, ``ops/symbolic.py``) and record the node."""
        first = args[0]
        for value in symbolic.flatten(first):
            if not isinstance(value, symbolic.KerasTensor):
                raise TypeError(f"Layer '{self.name}' was called on a mix of symbolic tensors and "
                                f"{type(value).__name__}; in a functional model every input of a "
                                f"layer must come from `mn.Input` or another layer's output.")
        record_kwargs = dict(kwargs)
        if training is not None:
            record_kwargs["training"] = training
        if mask is not None:
            record_kwargs["mask"] = mask
        if isinstance(first, symbolic.KerasTensor) and first.node is not None \
                and not first.node.parents:
            # The user's own array enters here (straight from mn.Input): an image layer whose
            # layout was left to the default checks that the shape fits it.
            check_user_layout(self, first.shape)
        info = call_spec.call_info(self)
        probe_kwargs = kwargs
        if info.mask and "mask" not in kwargs:
            # a call that declares `mask` is probed with its input's (symbolic) mask, as Keras does
            known = mask if mask is not None else getattr(first, "_keras_mask", None)
            if known is not None:
                probe_kwargs = dict(kwargs, mask=known)
        try:
            specs = self._infer_output(info, args, probe_kwargs)
        except (ValueError, TypeError, IndexError) as error:
            kind = TypeError if isinstance(error, TypeError) else ValueError
            raise kind(f"Layer '{self.name}' ({type(self).__name__}) cannot be called on "
                       f"{symbolic.describe(list(args) + list(kwargs.values()))}: {error}") from None
        out = symbolic.record(self, args, record_kwargs, specs)
        self._symbolic_output_mask(first, mask, out)
        return out

    def _symbolic_output_mask(self, first, mask, out):
        """Keras's ``_keras_mask`` on symbolic outputs: a boolean KerasTensor describing the
        mask the layer gives its output (``compute_mask``; a ``supports_masking`` layer passes
        its input's on), or no attribute when there is none. Only a description: the model
        computes the real masks when it runs."""
        if mask is None and isinstance(first, symbolic.KerasTensor):
            mask = getattr(first, "_keras_mask", None)
        default = getattr(type(self).compute_mask, "keras_default", False)
        if default:
            if mask is None or not self.supports_masking:
                return
            masks = mask
        else:
            def probe(x, m=None):
                result = self.compute_mask(x, m)
                if result is None:
                    raise LookupError("no mask")
                return result
            try:
                specs = symbolic.infer_outputs(probe, (first,) if mask is None else (first, mask))
            except Exception:       # noqa: BLE001 - no mask, or one that cannot be described
                return
            masks = _mask_tensors(specs)
        outputs, masks = symbolic.flatten(out), symbolic.flatten(masks)
        if len(masks) == 1 and len(outputs) > 1:
            masks = masks * len(outputs)
        for tensor, m in zip(outputs, masks):
            if isinstance(tensor, symbolic.KerasTensor) and isinstance(m, symbolic.KerasTensor):
                tensor._keras_mask = m

    def _infer_output(self, info, args, kwargs):
        shapes = call_spec.shapes_dict(call_spec.bind(info, args, kwargs))
        first = next(iter(shapes.values()), None)
        formula = type(self).compute_output_shape is not SymbolicLayer.compute_output_shape
        if not self.built:
            self._maybe_build(info, args, kwargs)
        elif formula and len(args) == 1 and not kwargs and isinstance(first, tuple) \
                and all(s is not None for s in first[1:]):
            # A layer built before (a shared layer): run it once on zeros, so weights that do
            # not fit this input fail here, naming the tensor, and not at the first batch.
            with no_grad(), call_context(False):
                self._call_impl((Tensor(np.zeros((1,) + first[1:], dtype=args[0].dtype)),), {})
        if formula:
            output = self.compute_output_shape(
                **call_spec.shapes_for(self.compute_output_shape, shapes, info, type(self).__name__))
            return specs_from_shapes(output, self.dtype)
        return self._run_on_placeholders(args, kwargs)

    def _run_on_placeholders(self, args, kwargs):
        # A class with its own __call__ (a Model, Embedding, ...) runs through it; the others
        # through the base's call path, without hooks (a probe is not a forward pass).
        own_call = not getattr(type(self).__call__, "keras_default", False)

        def run(*concrete_args, **concrete_kwargs):
            with call_context(False):
                if own_call:
                    return self(*concrete_args, training=False, **concrete_kwargs)
                return self._call_impl(concrete_args, dict(concrete_kwargs, training=False))
        return symbolic.infer_outputs(run, args, kwargs)

    # ------------------------------------------------------------------ build state (saving)
    def get_build_config(self):
        """Keras's build state for saving: ``{"input_shape": ...}`` of a built layer, else None.
        A layer whose ``build`` takes more than the shape overrides it (with
        ``build_from_config``); a Keras file keeps it as the layer's ``build_config``."""
        if not self.built or self._build_input_shape is None:
            return None
        return {"input_shape": [None if s is None else int(s) for s in self._build_input_shape]}

    def build_from_config(self, config):
        """Build from ``get_build_config``'s dict (Keras calls it when a layer is loaded)."""
        if config and config.get("input_shape") is not None and not self.built:
            shape = tuple(config["input_shape"])
            self.build(shape)
            self._build_input_shape = shape
            self.built = True

    build_from_config.keras_default = True

    # ------------------------------------------------------------------ functional-graph views
    def _first_node(self, what):
        nodes = self.__dict__.get("_inbound_nodes")
        owner = self.__dict__.get("_trace_owner")
        if not nodes and owner is not None and owner() is not None:
            owner()._trace_graph()     # a layer of a built Sequential: its graph is traced now
            nodes = self.__dict__.get("_inbound_nodes")
        if not nodes:
            raise AttributeError(f"Layer '{self.name}' has never been called on a symbolic tensor "
                                 f"(from `mn.Input`) and thus has no defined {what}.")
        return nodes[0]

    @property
    def input(self):
        """The symbolic input(s) of the layer's first call in a functional graph (Keras)."""
        node = self._first_node("input")
        tensors = node.input_tensors or node.output_tensors    # an InputLayer: its tensor
        return tensors[0] if len(tensors) == 1 else tensors

    @property
    def output(self):
        """The symbolic output(s) of the layer's first call in a functional graph (Keras)."""
        tensors = self._first_node("output").output_tensors
        return tensors[0] if len(tensors) == 1 else tensors

    @property
    def input_shape(self):
        """The shape of ``input`` (a list for several), or the shape the layer was built with."""
        if "_assigned_input_shape" in self.__dict__:
            return self.__dict__["_assigned_input_shape"]
        if self.__dict__.get("_inbound_nodes"):
            value = self.input
            return [t.shape for t in value] if isinstance(value, list) else value.shape
        if self._build_input_shape is not None:
            return tuple(self._build_input_shape)
        raise AttributeError(f"Layer '{self.name}' has no defined input shape yet: call it on data "
                             f"or on a symbolic tensor first.")

    @property
    def output_shape(self):
        """The shape of ``output`` (a list for several), or computed from the build shape."""
        if "_assigned_output_shape" in self.__dict__:
            return self.__dict__["_assigned_output_shape"]
        if self.__dict__.get("_inbound_nodes"):
            value = self.output
            return [t.shape for t in value] if isinstance(value, list) else value.shape
        if self._build_input_shape is not None:
            return self.compute_output_shape(self._build_input_shape)
        raise AttributeError(f"Layer '{self.name}' has no defined output shape yet: call it on "
                             f"data or on a symbolic tensor first.")

    # A subclass may keep its own attribute of these names (Lambda's `output_shape` argument).
    @input_shape.setter
    def input_shape(self, value):
        self.__dict__["_assigned_input_shape"] = value

    @output_shape.setter
    def output_shape(self, value):
        self.__dict__["_assigned_output_shape"] = value

    def compute_output_shape(self, input_shape):
        """Output shape for ``input_shape`` (batch dim included; None for unknown sizes).

        The default builds the layer and runs it on zeros (eval mode, no graph) with
        placeholder sizes for the unknown ones (``ops/symbolic.py``); layers with a formula
        override it.
        """
        input_shape = tuple(input_shape)
        probe = symbolic.KerasTensor(input_shape, dtype=self.dtype)
        info = call_spec.call_info(self)
        if not self.built:
            self._maybe_build(info, (probe,), {})
        specs = self._run_on_placeholders((probe,), {})
        if isinstance(specs, tuple) and len(specs) == 2 and isinstance(specs[0], tuple) \
                and not isinstance(specs[1], tuple):
            return specs[0]
        return [spec[0] for spec in symbolic.flatten_specs(specs)]

