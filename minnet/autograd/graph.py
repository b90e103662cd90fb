"""Look at the backward graph: ``mn.print_graph(t)`` and ``mn.graph_to_dot(t)``."""
from .function import AccumulateGrad
from .tensor import Tensor

__all__ = ["print_graph", "graph_to_dot"]


def _label(node):
    if isinstance(node, AccumulateGrad):
        v = node.variable
        name = f"{v.name}: " if getattr(v, "name", None) else ""
        return f"AccumulateGrad ({name}shape {tuple(v.shape)}, {v.dtype})"
    return node.name()


def _root(t):
    if not isinstance(t, Tensor):
        raise TypeError(f"Expected an mn.Tensor. Received: {type(t).__name__}")
    if t.grad_fn is not None:
        return t.grad_fn
    if t.requires_grad:
        return t._gradient_edge()[0]
    return None


MAX_DEPTH = 100
_MAX_INDENT = 4 * 40


def graph_lines(t, max_depth=MAX_DEPTH):
    """The lines ``print_graph`` prints.

    The walk is iterative and each node is expanded once (a node reached again is shown
    as "(shown above)"); below ``max_depth`` levels the tree is cut with a note, so the
    text stays small however deep the graph (a 100,000-op chain prints ``max_depth`` lines).
    Indentation stops growing after 40 levels, so memory is linear in the number of lines.
    """
    root = _root(t)
    if root is None:
        return ["(no graph: the tensor does not require grad)"]
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"Invalid argument `max_depth`: expected a positive int. Received: max_depth={max_depth!r}")
    lines = []
    seen = set()
    # stack of (node, depth, prefix, branch); prefixes are built from the parent's, one
    # level at a time, and are at most max_depth * 4 characters long
    stack = [(root, 0, "", "")]
    while stack:
        node, depth, prefix, branch = stack.pop()
        if depth >= max_depth:
            lines.append(prefix + branch + f"... (graph continues; cut at max_depth={max_depth}: "
                                           f"pass a larger max_depth to see more)")
            continue
        again = id(node) in seen and not isinstance(node, AccumulateGrad)
        lines.append(prefix + branch + _label(node) + ("  (shown above)" if again else ""))
        if again:
            continue
        seen.add(id(node))
        children = [c for c, _ in node.next_functions if c is not None]
        child_prefix = prefix
        if len(prefix) < _MAX_INDENT:     # deeper levels keep the same indentation
            child_prefix += "" if branch == "" else ("    " if branch.startswith("└") else "│   ")
        for i in reversed(range(len(children))):
            last = i == len(children) - 1
            stack.append((children[i], depth + 1, child_prefix, "└── " if last else "├── "))
    return lines


def print_graph(t, file=None, max_depth=MAX_DEPTH):
    """Print the tree of backward nodes that produced ``t``, down to its leaves.

    Args:
        t: a Tensor.
        file: where to print (default stdout).
        max_depth: levels shown; deeper parts are replaced by one note line.

    Example:
        >>> x = mn.tensor(np.ones((4, 3)), requires_grad=True)
        >>> mn.print_graph((x * 2).sigmoid().sum())
        SumBackward
        └── SigmoidBackward
            └── MulBackward
                └── AccumulateGrad (shape (4, 3), float64)
    """
    print("\n".join(graph_lines(t, max_depth)), file=file)


def graph_to_dot(t):
    """The backward graph of ``t`` as Graphviz DOT text (render with ``dot -Tpng``)."""
    root = _root(t)
    out = ["digraph minnet {", '  node [shape=box, fontname="monospace"];']
    if root is None:
        out.append("}")
        return "\n".join(out)
    ids = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in ids:
            continue
        ids[id(node)] = f"n{len(ids)}"
        label = _label(node).replace('"', "'")
        out.append(f'  {ids[id(node)]} [label="{label}"];')
        for child, _ in node.next_functions:
            if child is not None:
                stack.append(child)
    stack = [root]
    done = set()
    while stack:
        node = stack.pop()
        if id(node) in done:
            continue
        done.add(id(node))
        for child, _ in node.next_functions:
            if child is not None:
                out.append(f"  {ids[id(node)]} -> {ids[id(child)]};")
                stack.append(child)
    out.append("}")
    return "\n".join(out)
