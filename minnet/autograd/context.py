"""``Context``: the ``ctx`` a Function's forward and backward share (saved arrays, the
in-place version check, and under double backward the saved arrays as graph Tensors)."""
import weakref

from .nodes import TENSOR_CLASS, AccumulateGrad

__all__ = ["Context", "FREED_MESSAGE", "RELEASED"]

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or to read saved arrays after "
    "they have been freed). Saved arrays are released when you call .backward(); "
    "call .backward(retain_graph=True) if you need to backward through the graph a second time.")


class Context:
    """The ``ctx`` a Function's forward and backward share.

    ``save_for_backward(*arrays)`` keeps arrays for backward (``ctx.saved_tensors``);
    ``needs_input_grad`` is a tuple of bools, one per positional forward argument.
    Any other attribute (``ctx.stride = 2``) may be set in forward and read in backward.
    Under ``create_graph=True``, ``saved_tensors`` gives Tensors connected to the graph
    (an input's own Tensor, the output's Tensor) instead of the arrays.
    """

    # Class-level defaults instead of an __init__: one Context per op, so the attribute
    # stores an __init__ would do are a measurable share of a small op.
    _saved = ()
    _versions = None
    _released = False
    _graph_saved = None
    needs_input_grad = ()
    non_differentiable = ()
    # True while backward runs for the last time through this ctx (no retain_graph): the
    # saved arrays are dropped right after, so a backward may overwrite them as scratch
    # (the recurrent kernels write the gate gradients over the saved gates).
    last_use = False

    def save_for_backward(self, *arrays):
        """Keep ``arrays`` (ndarrays or None) for backward; checked for in-place changes."""
        self._saved = arrays

    def mark_non_differentiable(self, *output_indices):
        """Declare outputs (by index) that receive no gradient (e.g. argmax indices)."""
        self.non_differentiable = tuple(output_indices)

    @property
    def saved_tensors(self):
        """The arrays given to ``save_for_backward``, in order."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        if self._versions:
            for counter, version, position, _, _ in self._versions:
                if counter.value != version:
                    array = self._saved[position]
                    raise RuntimeError(
                        f"One of the arrays needed for gradient computation has been modified by an "
                        f"in-place operation: saved array {position} of {self._fn_cls._node_name()} (shape "
                        f"{tuple(array.shape)}, dtype {array.dtype}) is at version "
                        f"{counter.value}; expected version {version}. Use an out-of-place "
                        f"operation (y = y + 1 instead of y += 1 / y.add_(1)) or .clone() first "
                        f"(views share their base's version counter).")
        if self._graph_saved is not None:
            return self._graph_saved
        return self._saved

    @property
    def saved_arrays(self):
        """The saved arrays as ndarrays, also under ``create_graph`` (checked like ``saved_tensors``)."""
        if self._graph_saved is None:
            return self.saved_tensors
        self.saved_tensors      # the version check
        return self._saved

    def graph_input(self, index, data):
        """In ``backward_graph``: a Tensor holding ``data`` (the values of forward input
        ``index``, e.g. a saved contiguous copy of it) wired to that input's place in the
        graph, so what is computed from it is differentiated with respect to the input."""
        Tensor = TENSOR_CLASS[0]
        t = Tensor._make(data)
        node = self._graph_node
        fn, nr = node.next_functions[index] if node is not None else (None, 0)
        if fn is None:
            return t
        shape = node._input_meta[index][0]
        if data.shape != shape:
            raise RuntimeError(f"graph_input({index}): data of shape {data.shape} given for an input of "
                               f"shape {shape}")
        t.requires_grad = True
        if type(fn) is AccumulateGrad:
            if fn.variable.data is data:
                return fn.variable
            t._accumulator = weakref.ref(fn)
        else:
            t.grad_fn, t._output_nr = fn, nr
        return t

    def graph_output(self, index, data):
        """In ``backward_graph``: a Tensor holding output ``index``'s values, wired to this node."""
        Tensor = TENSOR_CLASS[0]
        t = Tensor._make(data)
        if self._graph_node is not None:
            t.requires_grad = True
            t.grad_fn, t._output_nr = self._graph_node, index
        return t

    _graph_node = None


# The ctx every node holds once it has run without retain_graph: one store drops the
# saved arrays, and a second backward through the node raises FREED_MESSAGE.
RELEASED = Context()
RELEASED._released = True
