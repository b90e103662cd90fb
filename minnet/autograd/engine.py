"""The engine: ``run_backward`` walks the backward graph from the roots.

The nodes run in reverse topological order (iteratively, so a 100,000-op chain is fine);
each receives the summed gradient of its output(s) and hands its results to the nodes of
its inputs.  Three modes share the one loop (``run_backward``), each a small function:

* accumulate (``Tensor.backward``): leaves add into ``.grad`` as they are reached
  (``_accumulate_leaf``);
* capture (``autograd.grad(outputs, inputs)``): only the nodes on a path to an input run,
  and the inputs' gradients are returned instead of stored (``_Capture``);
* graph (``create_graph=True``): each node's backward is recorded with Tensor operations
  (``BackwardNode.apply_graph``), so the gradients can be differentiated again.

Gradients the engine made itself (and nothing else refers to) are "owned": a second
gradient for the same slot is then added in place instead of allocating a sum.
"""
import numpy as np

from minnet._checks import check_hook_gradient

from .backward_node import BackwardNode
from .grad_mode import grad_state
from .nodes import TENSOR_CLASS, AccumulateGrad

__all__ = ["run_backward"]


def _graph_order(roots):
    """In-edge count of every node reachable from ``roots`` (iterative: deep chains are fine)."""
    dependencies = {}
    stack = list(roots)
    root_set = set(roots)
    get = dependencies.get
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                count = get(child)
                if count is None:           # first edge into child: visit it once
                    dependencies[child] = 1
                    if child not in root_set:
                        stack.append(child)
                else:
                    dependencies[child] = count + 1
    return dependencies


def _needed(roots, targets):
    """Nodes that must run for gradients to reach a target node (post-order, iterative)."""
    needed = {}
    stack = [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            flag = False
            for child, _ in node.next_functions:
                if child is not None and (child in targets or needed.get(child)):
                    flag = True
                    break
            needed[node] = flag
            continue
        if node in needed:
            continue
        needed[node] = False      # placeholder while its children are visited
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and child not in needed:
                stack.append((child, False))
    return needed


def _run_hooks(node, index, g, graph, owned):
    """Apply the tensor hooks registered for output ``index`` of ``node``; retain_grad last."""
    hooks = node._tensor_hooks.get(index) if node._tensor_hooks else None
    if hooks:
        g, owned = _apply_hooks(hooks, g, graph, owned)
    retained = node._retained.get(index) if node._retained else None
    if retained is not None:
        t = retained()
        if t is not None:
            data = g.data if graph else g
            if t.grad is None:
                t.grad = np.array(data)
            else:
                t.grad = t.grad + data
    return g, owned


def _apply_hooks(hooks, g, graph, owned):
    Tensor = TENSOR_CLASS[0]
    if hooks:
        for fn in list(hooks.values()):
            arg = g if graph else Tensor._make(g)
            r = fn(arg)
            if r is None:
                continue
            check_hook_gradient(r, g.shape, fn, "tensor hook")
            if graph:
                r = r if isinstance(r, Tensor) else Tensor._make(np.asarray(r, dtype=g.dtype))
            else:
                r = np.asarray(r.data if isinstance(r, Tensor) else r)
                if r.dtype != g.dtype:
                    r = r.astype(g.dtype)
            if r.shape != g.shape:
                raise RuntimeError(f"A hook returned a gradient of shape {tuple(r.shape)}, but the tensor "
                                   f"has shape {tuple(g.shape)}")
            g = r
            owned = False
    return g, owned



def run_backward(tensors, grad_tensors, retain_graph=False, create_graph=False, inputs=None,
                 allow_unused=False):
    """Backpropagate ``grad_tensors`` (d loss / d tensor, one per tensor) through the graph.

    Without ``inputs``: accumulate into the ``.grad`` of every leaf reached.  With
    ``inputs`` (a list of Tensors): return their gradients instead and touch no ``.grad``
    (``autograd.grad``).  ``create_graph``: gradients are Tensors and the backward pass is
    recorded.
    """
    buffers, owned, roots = _seed(tensors, grad_tensors)
    capture = None if inputs is None else _Capture(inputs, roots)
    graph = bool(create_graph)
    direct = capture is None and not graph       # leaves may be accumulated as they are reached
    dependencies = _graph_order(roots)
    ready = [r for r in roots if dependencies.get(r, 0) == 0]
    prev_mode = grad_state.enabled
    grad_state.enabled = graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            grads_owned = owned.pop(node, None)
            is_leaf = type(node) is AccumulateGrad
            if grads is not None:
                if (is_leaf and node.variable._hooks) or node._tensor_hooks or node._retained:
                    _run_node_hooks(node, grads, grads_owned, graph)
                if capture is not None:
                    capture.take(node, grads, grads_owned, graph)
            if is_leaf:
                if capture is None and grads is not None and grads[0] is not None:
                    _accumulate_leaf(node, grads[0], grads_owned[0], graph)
                continue
            if capture is not None and not capture.needed.get(node):
                continue
            input_grads, raw, incoming = _node_backward(node, grads, graph, retain_graph)
            _send(node, input_grads, raw, incoming, buffers, owned, dependencies, ready, direct, graph)
            if not retain_graph:
                node.release()
    finally:
        grad_state.enabled = prev_mode
    return None if capture is None else capture.result(allow_unused)


def _seed(tensors, grad_tensors):
    """The roots of the walk and their gradient buffers ``{node: [grad per output]}`` (the
    caller's gradients, never owned)."""
    buffers = {}
    owned = {}
    roots = []
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn: "
                               f"nothing to backpropagate to (was it computed under mn.no_grad(), or "
                               f"from tensors without requires_grad=True?)")
        node, nr = t._gradient_edge()
        if node not in buffers:
            n_out = len(node._output_meta) if type(node) is BackwardNode else 1
            buffers[node] = [None] * n_out
            owned[node] = [False] * n_out
            roots.append(node)
        slot = buffers[node]
        slot[nr] = g if slot[nr] is None else slot[nr] + g
        owned[node][nr] = False
    return buffers, owned, roots


class _Capture:
    """Mode ``inputs=`` (``autograd.grad``): the nodes that must run for gradients to reach
    the inputs, and the inputs' gradients as they pass (no ``.grad`` is touched)."""

    def __init__(self, inputs, roots):
        self.targets = {}           # (node, output_nr) -> positions in inputs
        for k, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (input {k}) does not require grad")
            self.targets.setdefault(t._gradient_edge(), []).append(k)
        self.nodes = {node for node, _ in self.targets}
        self.needed = _needed(roots, self.nodes)
        self.grads = [None] * len(inputs)

    def take(self, node, grads, owned, graph):
        if node in self.nodes:
            for i, g in enumerate(grads):
                for k in self.targets.get((node, i), ()):
                    self.grads[k] = g if (graph or owned[i]) else np.array(g)

    def result(self, allow_unused):
        Tensor = TENSOR_CLASS[0]
        result = []
        for k, g in enumerate(self.grads):
            if g is None:
                if not allow_unused:
                    raise RuntimeError(f"One of the differentiated Tensors (input {k}) appears to not have been "
                                       f"used in the graph. Set allow_unused=True if this is the desired "
                                       f"behavior.")
                result.append(None)
            else:
                result.append(g if isinstance(g, Tensor) else Tensor._make(g))
        return tuple(result)


def _run_node_hooks(node, grads, owned, graph):
    """The hooks of the tensors whose gradients ``grads`` are (a leaf's own hooks, or the
    tensor hooks and retain_grad of a node's outputs), applied in place on ``grads``."""
    if type(node) is AccumulateGrad:
        if grads[0] is not None:
            grads[0], owned[0] = _apply_hooks(node.variable._hooks, grads[0], graph, owned[0])
        return
    for i, g in enumerate(grads):
        if g is not None:
            grads[i], owned[i] = _run_hooks(node, i, g, graph, owned[i])


def _accumulate_leaf(node, g, owned, graph):
    """Mode accumulate: add a leaf's gradient into its ``.grad`` (an ndarray, also under
    ``create_graph``)."""
    if graph:
        node.accumulate(g.data, False)
    else:
        node.accumulate(g, owned)


def _node_backward(node, grads, graph, retain_graph):
    """Run one node's backward: ``(gradient per input, the raw results, the incoming
    gradients)``; raw is None when the results may be arrays someone else keeps (a user's
    Function), () when nothing is to be owned."""
    if grads is None or (grads[0] is None and _all_none(grads)):
        return [None] * len(node.next_functions), (), ()
    if graph:                                   # mode graph: the backward is recorded
        return node.apply_graph(grads), (), ()
    if not retain_graph and not node.ctx._released:
        node.ctx.last_use = True
    input_grads, raw, incoming = node.apply(grads)
    if node.fn_cls._user:
        raw = None        # a user's backward may return arrays it keeps: never own them
    return input_grads, raw, incoming


def _send(node, input_grads, raw, incoming, buffers, owned, dependencies, ready, direct, graph):
    """Hand each input's gradient to the node of that input: summed into its buffer (in
    place when the engine owns the buffer), and the node queued when its last edge is in."""
    i = 0
    for child, index in node.next_functions:
        if child is None:
            i += 1
            continue
        g = input_grads[i]
        if direct and g is not None and type(child) is AccumulateGrad \
                and dependencies[child] == 1 and child not in buffers and not child.variable._hooks:
            # The last edge into a leaf without hooks, and the only one with a gradient:
            # accumulate now, as its own turn in the loop would
            # (benchmarks/bench_autograd.py, mlp100).
            child.accumulate(g, raw is not None and _is_fresh(g, i, raw, incoming, node.ctx._saved))
            dependencies[child] = 0
            i += 1
            continue
        if g is not None:
            slot = buffers.get(child)
            if slot is None:
                n_out = len(child._output_meta) if type(child) is BackwardNode else 1
                if n_out == 1:
                    buffers[child] = [g]
                    owned[child] = [(not graph) and raw is not None and
                                    _is_fresh(g, i, raw, incoming, node.ctx._saved)]
                else:
                    slot = buffers[child] = [None] * n_out
                    owned[child] = [False] * n_out
            if slot is not None:
                current = slot[index]
                if current is None:
                    slot[index] = g
                    owned[child][index] = (not graph) and raw is not None and \
                        _is_fresh(g, i, raw, incoming, node.ctx._saved)
                elif graph:
                    slot[index] = current + g
                elif owned[child][index] and current.shape == g.shape and current.flags.writeable:
                    current += g
                else:
                    slot[index] = current + g
                    owned[child][index] = True
        remaining = dependencies[child] - 1
        dependencies[child] = remaining
        if remaining == 0:
            ready.append(child)
        i += 1


def _all_none(grads):
    for g in grads:
        if g is not None:
            return False
    return True


def _is_fresh(g, position, raw, incoming, saved):
    """True when ``g`` is a new array that nothing else refers to (safe to add into in place)."""
    if g.base is not None or not g.flags.writeable:
        return False
    for other in incoming:
        if other is g:
            return False
    j = 0
    for other in raw:
        if other is g and j != position:
            return False
        j += 1
    for other in saved:
        if other is g:
            return False
    return True
