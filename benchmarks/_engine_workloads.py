"""The engine workloads of bench_autograd.py, written once for either library.

Each builder takes the library's pieces (``tensor``, ``param`` making a leaf that needs
a gradient, and the functional module ``F`` with ``linear``/``relu``) and returns one
zero-argument call of forward + backward.  No library is imported here, so
bench_autograd_separate.py can load exactly one per process.
"""
import numpy as np


def mlp_run(tensor, param, F, depth=100, width=32, batch=64):
    """100 x (linear 32->32 + relu) at batch 64, then ``.sum().backward()``."""
    rng = np.random.default_rng(0)
    ws = [param(rng.standard_normal((width, width)).astype(np.float32) * 0.2) for _ in range(depth)]
    bs = [param(np.zeros(width, np.float32)) for _ in range(depth)]
    x = tensor(rng.standard_normal((batch, width)).astype(np.float32))

    def run():
        h = x
        for w, b in zip(ws, bs):
            h = F.relu(F.linear(h, w, b))
        h.sum().backward()
        for p in ws + bs:
            p.grad = None
    return run


def chain_run(param, n_ops=1000):
    """1,000 small elementwise ops on a (16,) tensor, then backward."""
    x = param(np.linspace(0.5, 1.5, 16).astype(np.float32))

    def run():
        y = x
        for _ in range(n_ops // 4):
            y = y * 1.0001
            y = y + 0.001
            y = y - 0.0005
            y = y * 0.9999
        y.sum().backward()
        x.grad = None
    return run


def layer_run(tensor_with_grad, call, n=3_200_000):
    """``call(x).sum().backward()`` on ``n`` floats (``call`` is the layer applied as the
    library applies it in a training loop)."""
    x = tensor_with_grad(np.random.default_rng(0).standard_normal((n // 100, 100)).astype(np.float32))

    def run():
        call(x).sum().backward()
        x.grad = None
    return run
