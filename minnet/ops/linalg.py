"""``keras.ops.linalg``: inverse, determinant, solves, factorisations and norms over the
last two axes (batched), as NumPy/SciPy compute them.

Differentiable (closed-form backward, docs/ops.md): ``inv``, ``det``, ``slogdet``/``logdet``,
``solve``, ``solve_triangular``, ``cholesky``, ``cholesky_inverse``, ``norm``, ``pinv`` and
``lstsq`` (through ``inv``/``solve``), ``eigh`` (eigenvalues and vectors, distinct
eigenvalues). Forward only (constant results): ``eig``, ``qr``, ``svd``, ``lu_factor``,
``matrix_rank``.
"""
import numpy as np
import scipy.linalg

from minnet.autograd import Function, Tensor
from minnet.autograd.functional import jvp as _autograd_jvp

from ._dispatch import cast_to, convert, keras_op, norm_axes, promote, to_float, wrap

__all__ = ["inv", "det", "slogdet", "logdet", "solve", "solve_triangular", "cholesky", "cholesky_inverse",
           "eig", "eigh", "qr", "svd", "lu_factor", "lstsq", "pinv", "matrix_rank", "norm", "jvp"]


def _square(x, name="x"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Invalid argument `{name}`: expected square matrices (..., n, n). Received: shape {x.shape}")
    return to_float(x)


def _mT(a):
    return a.transpose(-1, -2) if isinstance(a, Tensor) else np.swapaxes(a, -1, -2)


class _Inv(Function):
    """``Y = A⁻¹``; ``dA = -Yᵀ G Yᵀ``."""

    @staticmethod
    def forward(ctx, a):
        y = np.linalg.inv(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        yt = _mT(y)
        return -(yt @ g @ yt)

    backward_graph = backward


class _Solve(Function):
    """``X = A⁻¹ B``; ``dB = A⁻ᵀ G``, ``dA = -dB Xᵀ``."""

    @staticmethod
    def forward(ctx, a, b):
        x = np.linalg.solve(a, b)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        db = np.linalg.solve(_mT(a), g)
        return -(db @ _mT(x)), db


class _SlogDet(Function):
    """``log|det A|``; ``dA = G A⁻ᵀ``."""

    @staticmethod
    def forward(ctx, a):
        sign, logabs = np.linalg.slogdet(a)
        ctx.save_for_backward(a)
        return logabs

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g[..., None, None] if isinstance(g, np.ndarray) else g.unsqueeze(-1).unsqueeze(-1)) * _mT(inv(a))

    backward_graph = backward


class _Cholesky(Function):
    """``A = L Lᵀ``; ``dA = ½ L⁻ᵀ Φ(Lᵀ G) L⁻¹`` symmetrised, Φ the lower triangle with a halved diagonal."""

    @staticmethod
    def forward(ctx, a):
        lower = np.linalg.cholesky(a)
        ctx.save_for_backward(lower)
        return lower

    @staticmethod
    def backward(ctx, g):
        (lower,) = ctx.saved_tensors
        phi = np.tril(_mT(lower) @ g)
        phi = phi - 0.5 * np.eye(phi.shape[-1]) * phi
        linv = np.linalg.inv(lower)
        s = _mT(linv) @ phi @ linv
        return 0.5 * (s + _mT(s))


class _Eigh(Function):
    """Eigenvalues ``w`` and vectors ``V`` of a symmetric matrix (``V`` normalised);
    ``dA = V (diag(gw) + F ∘ (Vᵀ gV)) Vᵀ`` with ``F_ij = 1/(w_j - w_i)``, symmetrised."""

    @staticmethod
    def forward(ctx, a):
        w, v = np.linalg.eigh(a)
        ctx.save_for_backward(w, v)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.saved_tensors
        inner = np.zeros(v.shape, v.dtype)
        if gw is not None:
            inner = inner + np.eye(w.shape[-1]) * gw[..., None, :]
        if gv is not None:
            diff = w[..., None, :] - w[..., :, None]
            with np.errstate(divide="ignore"):
                f = np.where(diff == 0, 0.0, 1.0 / np.where(diff == 0, 1.0, diff))
            inner = inner + f * (_mT(v) @ gv)
        out = v @ inner @ _mT(v)
        return 0.5 * (out + _mT(out))


@keras_op("x")
def inv(x):
    return _Inv.apply(_square(x))


@keras_op("x")
def det(x):
    """The determinant (differentiable: ``d det / dA = det · A⁻ᵀ``)."""
    x = _square(x)
    sign = Tensor(np.linalg.slogdet(x.data)[0].astype(x.dtype))
    return sign * _SlogDet.apply(x).exp()


@keras_op("x")
def slogdet(x):
    """``(sign, log|det x|)``."""
    x = _square(x)
    return Tensor(np.linalg.slogdet(x.data)[0].astype(x.dtype)), _SlogDet.apply(x)


@keras_op("x")
def logdet(x):
    """``log det x`` for a positive-definite (Hermitian) ``x``; NaN for a negative determinant."""
    x = _square(x)
    sign = np.linalg.slogdet(x.data)[0]
    out = _SlogDet.apply(x)
    return out + Tensor(np.where(sign > 0, 0.0, np.nan).astype(x.dtype))


def _solve_pair(a, b):
    dtype = promote(a, b, float)
    return cast_to(a, dtype), cast_to(b, dtype)


@keras_op("a", "b")
def solve(a, b):
    """``x`` with ``a @ x = b`` (``b`` a vector ``(..., n)`` or matrices ``(..., n, k)``)."""
    a, b = _solve_pair(_square(a, "a"), b)
    if b.ndim == a.ndim - 1:
        return _Solve.apply(a, b.unsqueeze(-1)).squeeze(-1)
    return _Solve.apply(a, b)


@keras_op("a", "b")
def solve_triangular(a, b, lower=False):
    """``solve`` for a triangular ``a`` (only its ``lower``/upper triangle is read)."""
    a = _square(a, "a")
    mask = np.tril(np.ones(a.shape[-2:], bool)) if lower else np.triu(np.ones(a.shape[-2:], bool))
    return solve(a * Tensor(mask.astype(a.dtype)), b)


@keras_op("x")
def cholesky(x, upper=False):
    lower = _Cholesky.apply(_square(x))
    return _mT(lower) if upper else lower


@keras_op("x")
def cholesky_inverse(x, upper=False):
    """The inverse of ``A`` from its Cholesky factor ``x`` (``A = x xᵀ``, or ``xᵀ x`` if ``upper``)."""
    x = _square(x)
    a = _mT(x) @ x if upper else x @ _mT(x)
    return _Inv.apply(a)


@keras_op("x")
def eig(x):
    """Eigenvalues and vectors of a general matrix (real parts; forward only). Raises if
    the spectrum is complex, since minnet tensors are real."""
    x = _square(x)
    w, v = np.linalg.eig(x.data)
    if np.iscomplexobj(w) and np.abs(np.imag(w)).max() > 0:
        raise ValueError("eig: the matrix has complex eigenvalues; minnet tensors are real (use eigh for "
                         "symmetric matrices).")
    return wrap(np.real(w).astype(x.dtype)), wrap(np.real(v).astype(x.dtype))


@keras_op("x")
def eigh(x):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix; differentiable."""
    return _Eigh.apply(_square(x))


@keras_op("x")
def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"Invalid argument `mode`: expected 'reduced' or 'complete'. Received: mode={mode!r}")
    x = to_float(x)
    q, r = np.linalg.qr(x.data, mode=mode)
    return wrap(q), wrap(r)


@keras_op("x")
def svd(x, full_matrices=True, compute_uv=True):
    """``(u, s, vh)`` (forward only), or ``s`` with ``compute_uv=False``."""
    x = to_float(x)
    if not compute_uv:
        return wrap(np.linalg.svd(x.data, compute_uv=False))
    u, s, vh = np.linalg.svd(x.data, full_matrices=full_matrices)
    return wrap(u), wrap(s), wrap(vh)


@keras_op("x")
def lu_factor(x):
    """``(lu, pivots)`` as ``scipy.linalg.lu_factor`` (pivots 0-based, int32; any (M, N))."""
    x = to_float(x)
    if x.ndim < 2:
        raise ValueError(f"Invalid argument `x`: expected matrices (..., M, N). Received: shape {x.shape}")
    if x.ndim == 2:
        lu, piv = scipy.linalg.lu_factor(x.data)
        return wrap(lu), wrap(piv.astype(np.int32))
    flat = x.data.reshape(-1, *x.shape[-2:])
    pairs = [scipy.linalg.lu_factor(m) for m in flat]
    lu = np.stack([p[0] for p in pairs]).reshape(x.shape)
    piv = np.stack([p[1] for p in pairs]).reshape(*x.shape[:-2], -1).astype(np.int32)
    return wrap(lu), wrap(piv)


@keras_op("a", "b")
def lstsq(a, b, rcond=None):
    """The least-squares ``x`` minimising ``|a @ x - b|`` (differentiable for full column rank)."""
    a, b = _solve_pair(a, b)
    if rcond is not None or a.shape[-2] < a.shape[-1]:
        return wrap(np.linalg.lstsq(a.data, b.data, rcond=rcond)[0])
    at = _mT(a)
    return solve(at @ a, at @ b if b.ndim == 2 else (at @ b.unsqueeze(-1)).squeeze(-1))


@keras_op("x")
def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse (via SVD; forward only)."""
    x = to_float(x)
    kwargs = {} if rcond is None else {"rcond": rcond}
    return wrap(np.linalg.pinv(x.data, **kwargs).astype(x.dtype))


@keras_op("x")
def matrix_rank(x, tol=None):
    return wrap(np.asarray(np.linalg.matrix_rank(to_float(x).data, tol=tol), dtype=np.int32))


@keras_op("x")
def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm as ``numpy.linalg.norm`` (differentiable for the usual orders)."""
    x = to_float(x)
    if axis is None:
        axes = tuple(range(x.ndim)) if ord is None or x.ndim <= 2 else None
        if ord is not None and x.ndim > 2:
            raise ValueError(f"Invalid argument `ord`: needs `axis` for a tensor of rank {x.ndim}.")
        if ord is None:
            return _pnorm(x, 2, axes, keepdims)
        axis = tuple(range(x.ndim))
    axes = norm_axes(axis, x.ndim)
    if len(axes) == 1:
        p = 2 if ord is None else ord
        return _pnorm(x, p, axes, keepdims)
    if len(axes) != 2:
        raise ValueError(f"Invalid argument `axis`: expected one or two axes. Received: axis={axis}")
    a, b = axes
    if ord in (None, "fro", "f"):
        return _pnorm(x, 2, axes, keepdims)
    if ord in (1, -1, np.inf, -np.inf, float("inf"), float("-inf")):
        inner_axis, outer = (a, b) if ord in (1, -1) else (b, a)
        sums = x.abs().sum(axis=inner_axis, keepdims=True)
        out = sums.amax(outer, keepdim=True) if ord in (1, np.inf) else sums.amin(outer, keepdim=True)
        return out if keepdims else out.squeeze(axes)
    if ord in ("nuc", 2, -2):
        s = np.linalg.norm(x.data, ord=ord, axis=axes, keepdims=keepdims)
        return wrap(s.astype(x.dtype))
    raise ValueError(f"Invalid argument `ord` for a matrix norm: expected None, 'fro', 'nuc', 1, -1, 2, -2, "
                     f"inf or -inf. Received: ord={ord!r}")


def _pnorm(x, p, axes, keepdims):
    if p in ("fro", "f"):
        p = 2
    if p == 2:
        return (x * x).sum(axis=axes, keepdims=keepdims).sqrt()
    if p == 1:
        return x.abs().sum(axis=axes, keepdims=keepdims)
    if p == np.inf:
        return x.abs().amax(axes, keepdims)
    if p == -np.inf:
        return x.abs().amin(axes, keepdims)
    if p == 0:
        return wrap((x.data != 0).sum(axis=axes, keepdims=keepdims).astype(x.dtype))
    return (x.abs() ** float(p)).sum(axis=axes, keepdims=keepdims) ** (1.0 / float(p))


def jvp(fun, primals, tangents, has_aux=False):
    """Forward-mode product ``(fun(*primals), J · tangents)`` (with ``has_aux``: ``fun`` returns
    ``(output, aux)`` and ``aux`` is returned third)."""
    primals = tuple(to_float(convert(p)) for p in primals)
    tangents = tuple(cast_to(convert(t), p.dtype) for t, p in zip(tangents, primals))
    aux = []

    def f(*xs):
        out = fun(*xs)
        if has_aux:
            out, extra = out
            aux.append(extra)
        return out

    out, tangent_out = _autograd_jvp(f, primals, tangents)
    return (out, tangent_out, aux[0]) if has_aux else (out, tangent_out)
