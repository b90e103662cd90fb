"""Recurrent layers vs PyTorch CPU: LSTM/GRU forward+backward, bytes saved, a text classifier fit.

    python benchmarks/bench_recurrent.py [--threads 1,2] [--repeat 15] [--skip-fit]

1. ``LSTM(128)`` / ``GRU(128)``, ``return_sequences=True``, float32, batch 64 x 50 steps x
   64 features: median time of forward + backward (gradient of the output sequence given)
   for minnet and ``torch.nn.LSTM/GRU(batch_first=True)``, run interleaved in this process
   at the same thread count; ratio = torch time / minnet time (> 1: minnet faster).
2. Bytes kept for backward per time step: minnet's saved arrays (read from the graph's
   ctx, parameters excluded, the input included) and PyTorch's (``saved_tensors_hooks``,
   unique storages, parameters excluded), divided by the 50 steps.
3. Text classifier ``Embedding(10000, 64) -> LSTM(64) -> Dense(2)``, batch 64 x 100 tokens,
   Adam, cross-entropy from logits: minnet ``fit`` (one epoch of ``--fit-batches`` batches)
   vs the equivalent PyTorch loop; median samples/s over ``--epochs`` epochs.

``--gemms`` prints instead where an LSTM(128) step's GEMMs go: each GEMM of the kernels'
arrangement through minnet's BLAS (``minnet._ext._blas.py_gemm``, scipy's OpenBLAS) and the
same products through ``torch.matmul`` (MKL), CPU time of the calling thread at 1 thread,
medians of 25 interleaved runs (the per-step ones are 50 calls); then the per-step products
of minnet's float32 kernels through their own step GEMM (``stepgemm_kernels.h``, the weights packed
once), with this CPU's best copy and, on an AVX-512 CPU, the AVX2 copy too.

``--clock thread`` times with ``time.thread_time()`` (CPU time of the calling thread)
instead of the wall clock: at 1 thread both frameworks compute in the calling thread, so
this leaves out the time the process waits for a core on a busy machine (it still feels
the other processes through the shared caches). Only valid with ``--threads 1``.

Every row also gives the spread (lowest and highest of the interleaved rounds' medians,
for both frameworks) and the machine's 1-minute load average before and after the row:
on a busy machine the ratio of one row is only as good as that spread.

JSON -> benchmarks/results/recurrent.json
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import resource  # noqa: E402  (Unix: page-fault counts)
except ImportError:
    resource = None
import time  # noqa: E402
import tracemalloc  # noqa: E402

from _common import median_ms, write_results  # noqa: E402

import minnet as mn  # noqa: E402
from minnet import layers  # noqa: E402
from minnet.autograd.function import BackwardNode  # noqa: E402

N, T, I, H = 64, 50, 64, 128


def minnet_step(kind, x, g):
    layer = (layers.LSTM if kind == "lstm" else layers.GRU)(H, return_sequences=True)
    layer(x)

    def step():
        for p in layer.parameters():
            p.grad = None
        xt = mn.tensor(x, requires_grad=True)
        y = layer(xt, training=True)
        y.backward(g)
    return layer, step


def torch_step(torch, kind, x, g):
    module = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(I, H, batch_first=True)
    xt0 = torch.from_numpy(x)
    gt = torch.from_numpy(g)

    def step():
        module.zero_grad(set_to_none=True)
        xt = xt0.clone().requires_grad_(True)
        y, _ = module(xt)
        y.backward(gt)
    return module, step


def minnet_saved_bytes(layer, x):
    params = {id(p.data) for p in layer.parameters()}
    y = layer(mn.tensor(x, requires_grad=True), training=True)
    seen, total, stack = set(params), 0, [y.grad_fn]
    while stack:
        node = stack.pop()
        if not isinstance(node, BackwardNode):
            continue
        for a in list(node.ctx._saved) + list(vars(node.ctx).values()):
            if isinstance(a, np.ndarray) and id(a) not in seen:
                seen.add(id(a))
                total += a.nbytes
        stack.extend(c for c, _ in node.next_functions)
    return total


def torch_saved_bytes(torch, module, x):
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    storages = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(torch.from_numpy(x).requires_grad_(True))
    return sum(storages.values())


def text_data(n_samples, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 10000, size=(n_samples, 100))
    y = (x[:, :10].mean(axis=1) > 5000).astype(np.int64)
    return x, y


def fit_minnet(x, y):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Embedding(10000, 64), layers.LSTM(64), layers.Dense(2)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=False)


def fit_torch(torch, x, y):
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10000, 64)
            self.lstm = torch.nn.LSTM(64, 64, batch_first=True)
            self.out = torch.nn.Linear(64, 2)

        def forward(self, ids):
            _, (h, _) = self.lstm(self.emb(ids))
            return self.out(h[0])

    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def epoch():
        for start in range(0, len(x), 64):
            opt.zero_grad()
            loss = loss_fn(model(xt[start:start + 64]), yt[start:start + 64])
            loss.backward()
            opt.step()
    return epoch


def page_faults_per_call(fn, calls=10):
    """Minor page faults of the process per ``fn()`` (memory the C library gave back to the
    kernel and had to fault in, zeroed, again: a cost outside either framework's kernels)."""
    if resource is None:
        return None
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return round((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls, 1)


def peak_traced_mb(fn):
    """Peak NumPy/Python memory allocated during one ``fn()`` (tracemalloc; minnet only:
    PyTorch's allocator is not traced)."""
    fn()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return round(peak / 1e6, 1)


def thread_median_ms(fn, repeat, warmup=1):
    """Median CPU time of the calling thread for ``fn()`` in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        times.append(time.thread_time() - t)
    return float(np.median(times) * 1e3)


def gemm_breakdown(torch, repeat=25):
    """Median thread CPU ms of the LSTM(128) GEMMs: minnet's BLAS vs torch.matmul."""
    from minnet._ext._blas import py_gemm
    mn.set_num_threads(1)
    torch.set_num_threads(1)
    G = 4 * H
    rng = np.random.default_rng(0)
    arr = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in [
        ("x_t", (N, I)), ("h", (N, H)), ("X", (N * T, I)), ("Hp", (N * T, H)),
        ("XH", (N * T, I + H)), ("dA", (N * T, G)), ("dA_t", (N, G)), ("w_ih", (G, I)),
        ("w_hh", (G, H))]}
    out = {"NG": np.empty((N, G), np.float32), "NH": np.empty((N, H), np.float32),
           "GI": np.empty((G, I), np.float32), "GH": np.empty((G, H), np.float32),
           "GIH": np.empty((G, I + H), np.float32), "X": np.empty((N * T, I), np.float32)}
    t = {k: torch.from_numpy(v) for k, v in arr.items()}
    a = arr
    cases = [
        ("x_t W_ih^T, per step", lambda: [py_gemm(a["x_t"], a["w_ih"], trans_b=True, c=out["NG"])
                                          for _ in range(T)],
         lambda: t["X"] @ t["w_ih"].T),   # torch: one GEMM for all steps
        ("h W_hh^T, per step", lambda: [py_gemm(a["h"], a["w_hh"], trans_b=True, c=out["NG"])
                                        for _ in range(T)],
         lambda: [t["h"] @ t["w_hh"].T for _ in range(T)]),
        ("dA_t W_hh, per step", lambda: [py_gemm(a["dA_t"], a["w_hh"], c=out["NH"]) for _ in range(T)],
         lambda: [t["dA_t"] @ t["w_hh"] for _ in range(T)]),
        ("dW_ih = dA^T X", lambda: py_gemm(a["dA"], a["X"], trans_a=True, c=out["GI"]),
         lambda: t["dA"].T @ t["X"]),
        ("dW_hh = dA^T H_prev", lambda: py_gemm(a["dA"], a["Hp"], trans_a=True, c=out["GH"]),
         lambda: t["dA"].T @ t["Hp"]),
        ("[dW_ih | dW_hh] = dA^T [X | H_prev] (minnet now)",
         lambda: py_gemm(a["dA"], a["XH"], trans_a=True, c=out["GIH"]), None),
        ("dX = dA W_ih", lambda: py_gemm(a["dA"], a["w_ih"], c=out["X"]),
         lambda: t["dA"] @ t["w_ih"]),
    ]
    # minnet's float32 step GEMM (stepgemm_kernels.h), weights packed once as the kernels do; the
    # torch column times the same products per step through torch.matmul
    from minnet._ext import stepgemm_kernels as R
    arr["xh"] = np.concatenate([arr["x_t"], arr["h"]], axis=1)
    arr["w_cat"] = np.concatenate([arr["w_ih"], arr["w_hh"]], axis=1)
    arr["bias"] = rng.standard_normal(G).astype(np.float32)
    for k in ("xh", "w_cat", "bias"):
        t[k] = torch.from_numpy(arr[k])
    pk_cat, pk_hh, pk_ih = (R._stepgemm_pack(arr["w_cat"], trans=True), R._stepgemm_pack(arr["w_hh"]),
                            R._stepgemm_pack(arr["w_ih"]))
    best = R._stepgemm_isa()
    names = {2: "AVX-512", 1: "AVX2", 0: "baseline"}
    for isa in sorted({best, min(best, 1)}, reverse=True):
        def run(A, pk, c, init, isa=isa, **kw):
            R._stepgemm_isa(isa)
            R._stepgemm_run(A, *pk, c, init, calls=T, **kw)
            R._stepgemm_isa(best)
        cases += [
            (f"b + [x_t | h] [W_ih | W_hh]^T, per step (minnet step GEMM, {names[isa]})",
             lambda run=run: run(a["xh"], pk_cat, out["NG"], "bias", bias=a["bias"]),
             lambda: [torch.addmm(t["bias"], t["xh"], t["w_cat"].T) for _ in range(T)]),
            (f"dA_t W_hh, per step (minnet step GEMM, {names[isa]})",
             lambda run=run: run(a["dA_t"], pk_hh, out["NH"], "c"),
             lambda: [t["dA_t"] @ t["w_hh"] for _ in range(T)]),
            (f"dA_t W_ih, per step (minnet step GEMM, {names[isa]})",
             lambda run=run: run(a["dA_t"], pk_ih, np.empty((N, I), np.float32), "zero"),
             lambda: [t["dA_t"] @ t["w_ih"] for _ in range(T)]),
        ]
    rows = []
    for name, ours, theirs in cases:
        t_ours, t_theirs = [], []
        for _ in range(repeat):
            t_ours.append(thread_median_ms(ours, 1, warmup=0))
            if theirs is not None:
                t_theirs.append(thread_median_ms(theirs, 1, warmup=0))
        row = {"gemm": name, "minnet_ms": round(float(np.median(t_ours)), 2),
               "torch_ms": round(float(np.median(t_theirs)), 2) if t_theirs else None}
        rows.append(row)
        print(row, flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per row")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall")
    parser.add_argument("--gemms", action="store_true", help="only the GEMM breakdown")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--fit-batches", type=int, default=10)
    parser.add_argument("--skip-fit", action="store_true")
    args = parser.parse_args()
    import torch
    if args.gemms:
        write_results("recurrent_gemms.json", "LSTM(128) GEMMs: minnet BLAS vs torch",
                      gemm_breakdown(torch), torch=torch)
        return
    global median_ms
    if args.clock == "thread":
        if args.threads != "1":
            parser.error("--clock thread needs --threads 1 (other threads' work is not counted)")
        median_ms = thread_median_ms

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, T, I)).astype(np.float32)
    g = rng.standard_normal((N, T, H)).astype(np.float32)
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        mn.set_num_threads(threads)
        torch.set_num_threads(threads)
        for kind in ("lstm", "gru"):
            layer, ours = minnet_step(kind, x, g)
            module, theirs = torch_step(torch, kind, x, g)
            ours(), theirs()
            t_ours, t_theirs = [], []
            load_before = os.getloadavg()[0]
            for _ in range(args.rounds):      # interleave: the machine's load hits both alike
                t_ours.append(median_ms(ours, max(1, args.repeat // args.rounds), warmup=1))
                t_theirs.append(median_ms(theirs, max(1, args.repeat // args.rounds), warmup=1))
            ms_ours, ms_theirs = float(np.median(t_ours)), float(np.median(t_theirs))
            faults = [page_faults_per_call(fn) for fn in (ours, theirs)]
            row = {"workload": f"{kind.upper()}({H}) fwd+bwd {N}x{T}x{I}", "threads": threads,
                   "minnet_ms": round(ms_ours, 2), "torch_ms": round(ms_theirs, 2),
                   "ratio_torch_over_minnet": round(ms_theirs / ms_ours, 2),
                   "minnet_ms_spread": [round(min(t_ours), 2), round(max(t_ours), 2)],
                   "torch_ms_spread": [round(min(t_theirs), 2), round(max(t_theirs), 2)],
                   "round_ratios": [round(b / a, 2) for a, b in zip(t_ours, t_theirs)],
                   "load_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                   "minnet_page_faults_per_call": faults[0], "torch_page_faults_per_call": faults[1],
                   "minnet_peak_traced_mb": peak_traced_mb(ours),
                   "minnet_saved_bytes_per_step": minnet_saved_bytes(layer, x) // T,
                   "torch_saved_bytes_per_step": torch_saved_bytes(torch, module, x) // T}
            rows.append(row)
            print(row, flush=True)
        if not args.skip_fit:
            xs, ys = text_data(64 * args.fit_batches)
            ours, theirs = fit_minnet(xs, ys), fit_torch(torch, xs, ys)
            ours(), theirs()
            t_ours, t_theirs = [], []
            load_before = os.getloadavg()[0]
            for _ in range(args.epochs):
                t_ours.append(median_ms(ours, 1, warmup=0))
                t_theirs.append(median_ms(theirs, 1, warmup=0))
            ms_ours, ms_theirs = float(np.median(t_ours)), float(np.median(t_theirs))
            row = {"workload": "text classifier fit: Embedding(10000,64)-LSTM(64)-Dense(2), "
                               "batch 64 x 100 tokens", "threads": threads,
                   "minnet_samples_per_s": round(len(xs) / ms_ours * 1e3, 1),
                   "torch_samples_per_s": round(len(xs) / ms_theirs * 1e3, 1),
                   "ratio_minnet_over_torch": round(ms_theirs / ms_ours, 2),
                   "round_ratios": [round(b / a, 2) for a, b in zip(t_ours, t_theirs)],
                   "load_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
            rows.append(row)
            print(row, flush=True)
    write_results("recurrent.json", "recurrent layers vs torch", rows, torch=torch,
                  clock=args.clock)


if __name__ == "__main__":
    main()
