"""``compare``: run a minnet model and a torch module on one batch, tensor by tensor.

Rows name PyTorch ``state_dict`` keys (the plan's numbering, ``minnet.interop.plan``):
the output, the loss, the input gradient, every parameter gradient, every parameter after
one SGD step, every parameter and every buffer.  A ``ComparisonReport`` holds them.
"""
import math
from typing import Any, NamedTuple

import numpy as np

from minnet import functional as F
from minnet.autograd import Parameter, Tensor, enable_grad
from minnet.interop.plan import LayoutState, model_layers, named_slots, to_torch_value
from minnet.interop.torch_support import require_torch, torch_dtype
from minnet.optimizers import SGD

__all__ = ["compare", "ComparisonReport", "ComparisonRow", "TOLERANCES"]

# Default tolerances of ``compare`` per dtype: (rtol, atol).
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}


class StepPair(NamedTuple):
    """A parameter for the SGD-step rows: its key, minnet's value and gradient (torch
    layout), and torch's parameter (with its ``.grad``)."""

    key: str
    data: np.ndarray
    grad: np.ndarray
    torch_param: Any


class ComparisonRow(tuple):
    """``(name, max_abs, max_rel, ok)`` for one compared tensor."""

    __slots__ = ()

    def __new__(cls, name, max_abs, max_rel, ok):
        return super().__new__(cls, (name, float(max_abs), float(max_rel), bool(ok)))

    name = property(lambda self: self[0])
    max_abs = property(lambda self: self[1])
    max_rel = property(lambda self: self[2])
    ok = property(lambda self: self[3])


class ComparisonReport:
    """What ``compare`` found: one row per tensor and a verdict.

    Attributes:
        rows: list of ``ComparisonRow(name, max_abs, max_rel, ok)``; ``max_rel`` is the
            largest ``|mine - torch| / (|torch| + atol)``.
        ok: True when every row is within ``atol + rtol * |torch value|``.
        rtol, atol: the tolerances used.
        dtype: the dtype compared.
        notes: extra remarks (e.g. dropout active in training mode).
    """

    def __init__(self, rows, rtol, atol, dtype, notes=()):
        self.rows = list(rows)
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.dtype = str(dtype)
        self.notes = list(notes)

    @property
    def ok(self):
        return all(row.ok for row in self.rows)

    @property
    def failed(self):
        """Names of the rows that are out of tolerance."""
        return [row.name for row in self.rows if not row.ok]

    def __bool__(self):
        return self.ok

    def __getitem__(self, name):
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def __str__(self):
        width = max([len("tensor")] + [len(row.name) for row in self.rows])
        lines = [f"{'tensor':<{width}}  {'max abs diff':>12}  {'max rel diff':>12}  ok",
                 "-" * (width + 34)]
        for row in self.rows:
            lines.append(f"{row.name:<{width}}  {row.max_abs:>12.3e}  {row.max_rel:>12.3e}  "
                         f"{'yes' if row.ok else 'NO'}")
        lines.append("-" * (width + 34))
        verdict = "OK" if self.ok else f"MISMATCH in {', '.join(self.failed)}"
        lines.append(f"{verdict} ({self.dtype}, rtol={self.rtol:g}, atol={self.atol:g})")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def __repr__(self):
        return f"<ComparisonReport ok={self.ok} rows={len(self.rows)} failed={self.failed}>"


def _row(name, mine, theirs, rtol, atol):
    if mine is None or theirs is None:
        ok = mine is None and theirs is None
        return ComparisonRow(name, 0.0 if ok else math.inf, 0.0 if ok else math.inf, ok)
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    if mine.shape != theirs.shape:
        return ComparisonRow(name, math.inf, math.inf, False)
    if mine.size == 0:
        return ComparisonRow(name, 0.0, 0.0, True)
    diff = np.abs(mine - theirs)
    scale = np.abs(theirs)
    # Relative to |torch value| + atol, so entries that should be 0 (and are, up to rounding)
    # do not show a relative difference of 1.
    rel = diff / (scale + max(atol, np.finfo(np.float64).tiny))
    ok = bool(np.all(diff <= atol + rtol * scale) and np.array_equal(np.isnan(mine), np.isnan(theirs)))
    return ComparisonRow(name, float(np.nanmax(diff)), float(np.nanmax(rel)), ok)


def _check_loss(loss, y):
    key = "sum" if loss is None else loss
    if key not in ("sum", "mse", "cross_entropy"):
        raise ValueError(f"Invalid value for argument `loss`: expected None/'sum' (sum of the "
                         f"outputs), 'mse' or 'cross_entropy'. Received: loss={loss!r}")
    if key != "sum" and y is None:
        raise ValueError(f"Argument `y` is required for loss={key!r}.")
    return key


def compare(model, torch_module, x, y=None, loss=None, rtol=None, atol=None):
    """Run a minnet model and a torch module on the same input and report the differences.

    Both are run as they are (their current train/eval modes; a training-mode forward
    updates BatchNorm running statistics, as any forward would).  Existing ``.grad``
    values are put back afterwards.  Compared, tensor by tensor (names are PyTorch
    ``state_dict`` names, numbered as ``to_torch`` numbers the model's modules):

    * ``output``: the forward result;
    * ``input.grad``: the gradient of the loss with respect to ``x``;
    * ``grad/<name>``: every parameter gradient;
    * ``param/<name>``: every parameter itself (a weight that differs is named here);
    * ``sgd_step/<name>``: every parameter after one SGD step (``lr=0.1``), done on copies
      with ``minnet.optimizers.SGD`` and ``torch.optim.SGD``;
    * ``buffer/<name>``: BatchNorm ``running_mean`` / ``running_var`` after the forward.

    Args:
        model: a minnet ``Sequential`` (or layer).
        torch_module: the torch module to compare against (e.g. ``to_torch(model)``).
        x: input batch (ndarray), cast to the model's dtype.
        y: targets, needed for ``loss="mse"`` (same shape as the output) or
            ``"cross_entropy"`` (int labels ``(N,)`` or probabilities ``(N, C)``).
        loss: ``None``/``"sum"`` (default: the sum of the outputs), ``"mse"`` or
            ``"cross_entropy"`` (mean reductions).
        rtol, atol: tolerances; defaults per dtype: float32 ``1e-4``/``1e-5``, float64
            ``1e-10``/``1e-12``.  A row is ok when ``|mine - torch| <= atol + rtol*|torch|``
            everywhere.

    Returns:
        ``ComparisonReport`` (``.rows``, ``.ok``; ``str()`` is a table; truthy when ok).

    Raises:
        ValueError: the torch module lacks a parameter the model has (another architecture),
            or bad ``loss``/``y``.

    Shape:
        ``x``: ``(N, *input_shape)`` in the model's layout; a channels_last model's NHWC
        images are given to the torch module as NCHW (``x.transpose(0, 3, 1, 2)``), and
        4-D outputs and ``input.grad`` are permuted back before comparing.

    Example:
        >>> report = interop.compare(model, interop.to_torch(model), x)
        >>> print(report); assert report.ok
    """
    torch = require_torch()
    loss = _check_loss(loss, y)
    state = LayoutState()
    slots = named_slots(model, state)
    layers = model_layers(model)
    dtype = layers[0].dtype if layers else np.dtype(getattr(model, "dtype", "float32"))
    default_rtol, default_atol = TOLERANCES[np.dtype(dtype).name]
    rtol = default_rtol if rtol is None else float(rtol)
    atol = default_atol if atol is None else float(atol)
    dtype_t = torch_dtype(torch, dtype)

    torch_params = dict(torch_module.named_parameters())
    torch_buffers = dict(torch_module.named_buffers())
    for slot in slots:
        table = torch_params if slot.is_parameter else torch_buffers
        if slot.key not in table:
            raise ValueError(f"Invalid value for argument `torch_module`: it has no "
                             f"{'parameter' if slot.is_parameter else 'buffer'} {slot.key!r} "
                             f"(from layer '{slot.step.layer.name}'). compare() expects the module "
                             f"numbering of to_torch(model); its parameters are "
                             f"{sorted(torch_params)}.")

    notes = []
    if any(type(l).__name__ in ("Dropout", "AlphaDropout", "SpatialDropout2D") and l.training
           and l.rate > 0 for l in layers):
        notes.append("dropout is active (training mode): the two frameworks draw different masks, "
                     "so outputs differ; compare in eval mode or with rate 0.")

    # an Embedding reads integer indices: they stay integers and get no gradient
    indices = bool(layers) and type(layers[0]).__name__ == "Embedding"
    x_array = np.ascontiguousarray(np.asarray(x), dtype=np.int64 if indices else dtype)
    # channels_last images cross the boundary as NCHW; image outputs and gradients come back
    nhwc_in = state.input_layout == "channels_last" and x_array.ndim == 4
    nhwc_out = state.layout == "channels_last"

    def back(array, nhwc):
        return None if array is None else (
            np.ascontiguousarray(array.transpose(0, 2, 3, 1)) if nhwc and array.ndim == 4
            else array)
    minnet_params = [slot.weight for slot in slots
                     if slot.is_parameter and slot.weight is not None]
    saved_minnet = [(w, w.grad) for w in minnet_params]
    saved_torch = [(p, p.grad) for p in torch_module.parameters()]
    try:
        for w in minnet_params:
            w.grad = None
        for p in torch_module.parameters():
            p.grad = None
        # ---- minnet
        with enable_grad():
            x_mn = Tensor(x_array.copy(), requires_grad=not indices)
            out_mn = model(x_mn)
            loss_mn = _minnet_loss(out_mn, y, loss)
            loss_mn.backward()
        # ---- torch
        with torch.enable_grad():
            x_torch = x_array.transpose(0, 3, 1, 2) if nhwc_in else x_array
            x_t = torch.tensor(np.ascontiguousarray(x_torch),
                               dtype=torch.int64 if indices else dtype_t,
                               requires_grad=not indices)
            out_t = torch_module(x_t)
            y_t = y
            if nhwc_out and loss == "mse" and np.ndim(y) == 4:     # targets like the output
                y_t = np.ascontiguousarray(np.asarray(y).transpose(0, 3, 1, 2))
            loss_t = _torch_loss(torch, out_t, y_t, loss)
            loss_t.backward()

        rows = [_row("output", out_mn.data, back(out_t.detach().cpu().numpy(), nhwc_out),
                     rtol, atol),
                _row("loss", np.asarray(loss_mn.data), loss_t.detach().cpu().numpy(), rtol, atol),
                _row("input.grad", x_mn.grad,
                     None if x_t.grad is None else back(x_t.grad.cpu().numpy(), nhwc_in),
                     rtol, atol)]
        step_pairs, param_rows = [], []
        for slot in slots:
            key, step, suffix, weight = slot.key, slot.step, slot.suffix, slot.weight
            if not slot.is_parameter or weight is None:
                continue
            theirs = torch_params[key]
            grad_t = None if theirs.grad is None else theirs.grad.detach().cpu().numpy()
            param_rows.append(_row(f"param/{key}", to_torch_value(step, suffix, weight.data),
                                   theirs.detach().cpu().numpy(), rtol, atol))
            grad_mn = None if weight.grad is None else to_torch_value(step, suffix, weight.grad)
            rows.append(_row(f"grad/{key}", grad_mn, grad_t, rtol, atol))
            if weight.grad is not None and grad_t is not None:
                step_pairs.append(StepPair(key, to_torch_value(step, suffix, weight.data),
                                           grad_mn, theirs))
        rows.extend(_sgd_step_rows(torch, step_pairs, rtol, atol))
        rows.extend(param_rows)
        for slot in slots:
            if not slot.is_parameter and slot.weight is not None:
                rows.append(_row(f"buffer/{slot.key}", slot.weight.data,
                                 torch_buffers[slot.key].detach().cpu().numpy(), rtol, atol))
    finally:
        for w, grad in saved_minnet:
            w.grad = grad
        for p, grad in saved_torch:
            p.grad = grad
    return ComparisonReport(rows, rtol, atol, np.dtype(dtype).name, notes)


def _minnet_loss(out, y, loss):
    if loss == "sum":
        return out.sum()
    if loss == "mse":
        return F.mse_loss(out, np.asarray(y, dtype=out.dtype))
    target = np.asarray(y)
    if target.dtype.kind == "f":
        target = target.astype(out.dtype)
    return F.cross_entropy(out, target)


def _torch_loss(torch, out, y, loss):
    if loss == "sum":
        return out.sum()
    if loss == "mse":
        return torch.nn.functional.mse_loss(out, torch.tensor(np.asarray(y), dtype=out.dtype))
    target = np.asarray(y)
    if target.dtype.kind == "f":
        target_t = torch.tensor(target, dtype=out.dtype)
    else:
        target_t = torch.tensor(target.astype(np.int64))
    return torch.nn.functional.cross_entropy(out, target_t)


def _sgd_step_rows(torch, pairs, rtol, atol):
    """One SGD step (lr 0.1) on copies of each parameter, minnet's SGD against torch's."""
    if not pairs:
        return []
    mine, theirs = [], []
    for pair in pairs:
        copy = Parameter(np.array(pair.data, copy=True))
        copy.grad = np.array(pair.grad, copy=True)
        mine.append(copy)
        twin = pair.torch_param.detach().clone().requires_grad_(True)
        twin.grad = pair.torch_param.grad.detach().clone()
        theirs.append(twin)
    SGD(mine, learning_rate=0.1).step()
    torch.optim.SGD(theirs, lr=0.1).step()
    return [_row(f"sgd_step/{pair.key}", a.data, b.detach().cpu().numpy(), rtol, atol)
            for pair, a, b in zip(pairs, mine, theirs)]
