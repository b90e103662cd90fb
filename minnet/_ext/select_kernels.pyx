"""Selects and copies: ``where``, ``masked_fill`` and the fused backward of ``where``; the
block copy behind ``cat`` and ``stack``.

Selects run over same-shape C-contiguous arrays: a bool condition (read as its bytes,
0 or 1), float32/float64 values.  Each element is one branch-free select (both values are
loaded, then one is stored), which the compiler vectorises; NumPy's ``np.where`` branches
per element and mispredicts on a random mask.  Threads take blocks of ``BLOCK`` elements
as they come free (a dynamic schedule: a thread the OS delays holds up no fixed share);
blocks never overlap, and a select has no arithmetic, so the result is bit-identical for
any thread count and any schedule.  Broadcasting, other dtypes and strided arrays are the caller's NumPy
path (``autograd/indexing_ops.py``).

``concat`` copies C-contiguous arrays of one dtype into their concatenation along ``axis``.
Each input is seen as ``(outer, inner_i)`` rows of bytes (``outer`` the product of the sizes
before ``axis``); the output row is the inputs' rows one after another.  The copies are
split into chunks of at most ``CHUNK`` bytes, and threads take chunks as they come free, so a concatenation
along the first axis (``outer = 1``) is shared as well as one of many short rows.

``materialize`` copies a view whose last axis is contiguous or broadcast (the gradient
``sum``/``expand`` send back) into a new C-contiguous array, a row per task: the engine's
copy of such a gradient into a leaf's ``.grad`` (NumPy's copy of a strided view runs on one
thread).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t, intptr_t
from libc.string cimport memcpy

from minnet._ext._blas cimport floating
from minnet._ext._base cimport (BLOCK, block_len, check_array, check_threads, data_ptr,
                                grad_operand, is_f32, n_blocks, output_like, parallel_min, size_of)
from minnet._ext._base cimport team as _team

import numpy as np

cnp.import_array()

# Selects team from parallel_min() elements, copies from 4 * parallel_min() bytes
# (benchmarks/bench_autograd.py, "where" and "cat").

# Bytes per copy task: large enough that a task is mostly memcpy, small enough that a
# 4 MB concatenation makes dozens of tasks.
cdef enum:
    CHUNK = 65536


# --------------------------------------------------------------------------- selects

cdef inline void _where_block(const unsigned char* c, const floating* a, const floating* b,
                              floating* out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating va, vb
    for i in range(n):
        va = a[i]
        vb = b[i]
        out[i] = va if c[i] else vb


cdef inline void _fill_block(const unsigned char* c, const floating* a, floating value,
                             floating* out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating va
    for i in range(n):
        va = a[i]
        out[i] = value if c[i] else va


cdef inline void _select_block(const unsigned char* c, const floating* a, const floating* b,
                               floating value, floating* out, Py_ssize_t n) noexcept nogil:
    if b == NULL:
        _fill_block(c, a, value, out, n)
    else:
        _where_block(c, a, b, out, n)


cdef inline void _split_block(const unsigned char* c, const floating* g, floating* ga,
                              floating* gb, Py_ssize_t n) noexcept nogil:
    # ga = where(c, g, 0), gb = where(c, 0, g); either may be NULL (not needed)
    cdef Py_ssize_t i
    cdef floating v
    if ga != NULL and gb != NULL:
        for i in range(n):
            v = g[i]
            ga[i] = v if c[i] else 0
            gb[i] = 0 if c[i] else v
    elif ga != NULL:
        for i in range(n):
            v = g[i]
            ga[i] = v if c[i] else 0
    else:
        for i in range(n):
            v = g[i]
            gb[i] = 0 if c[i] else v


cdef void select_kernel(const unsigned char* c,  # IN  condition bytes (n,)
                        const floating* a,       # IN  (n,)
                        const floating* b,       # IN  (n,), or NULL: masked_fill
                        floating value,          # masked_fill's value (b NULL)
                        floating* out,           # OUT (n,); may be a or b
                        Py_ssize_t n, int n_threads) noexcept nogil:
    """where: out = a where c else b; masked_fill (b NULL): out = value where c else a."""
    cdef Py_ssize_t blk, start
    if _team(n, n_threads) == 1:
        _select_block(c, a, b, value, out, n)
        return
    for blk in prange(n_blocks(n), num_threads=n_threads, schedule="dynamic"):
        start = blk * BLOCK
        _select_block(c + start, a + start, b if b == NULL else b + start, value,
                      out + start, block_len(n, start))


cdef void where_backward_kernel(const unsigned char* c,  # IN  condition bytes (n,)
                                const floating* g,       # IN  (n,), or one block (grad_block)
                                floating* ga,            # OUT (n,) or NULL
                                floating* gb,            # OUT (n,) or NULL
                                Py_ssize_t n, bint grad_block, int n_threads) noexcept nogil:
    # grad_block: `g` holds BLOCK copies of one value (see _base.grad_operand) and
    # every block reads it from its start.
    cdef Py_ssize_t blk, start
    if _team(n, n_threads) == 1:
        if not grad_block:
            _split_block(c, g, ga, gb, n)
            return
        for blk in range(n_blocks(n)):
            start = blk * BLOCK
            _split_block(c + start, g, NULL if ga == NULL else ga + start,
                         NULL if gb == NULL else gb + start, block_len(n, start))
        return
    for blk in prange(n_blocks(n), num_threads=n_threads, schedule="dynamic"):
        start = blk * BLOCK
        _split_block(c + start, g if grad_block else g + start,
                     NULL if ga == NULL else ga + start, NULL if gb == NULL else gb + start,
                     block_len(n, start))


cdef object _condition(object c, object name, object shape):
    """``c`` as the uint8 view of a C-contiguous bool array of ``shape``, or an error naming it."""
    if not isinstance(c, np.ndarray):
        raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray of bool. "
                        f"Received: {name} of type {type(c).__name__}")
    if c.dtype != np.bool_:
        raise TypeError(f"Invalid argument `{name}`: expected dtype bool. "
                        f"Received: {name}.dtype={c.dtype}")
    if c.shape != shape:
        raise ValueError(f"Invalid argument `{name}`: expected shape {shape}. "
                         f"Received: {name}.shape={c.shape}")
    if not c.flags.c_contiguous:
        raise ValueError(f"Invalid argument `{name}`: expected a C-contiguous array. "
                         f"Received a non-contiguous array of shape {c.shape}")
    return c


def where(condition, a, b, out=None, n_threads=1):
    """``out = a where condition else b``, elementwise.

    Args:
        condition: bool array, C-contiguous, of ``a``'s shape.
        a, b: float32/float64 arrays, C-contiguous, same shape and dtype.
        out: optional output like ``a`` (may be ``a`` or ``b``).
        n_threads: threads for arrays of at least ``_base.parallel_min()`` elements.

    Shape:
        condition, a, b, out: ``(*)``, all the same.
    """
    check_array(a, "a")
    check_array(b, "b", a.dtype, a.shape)
    _condition(condition, "condition", a.shape)
    out = output_like(out, a)
    return _select(condition, a, b, 0, out, check_threads(n_threads))


cdef object _select(c, a, b, double value, out, int threads):
    """select_kernel on the checked arrays (``b`` None: masked_fill with ``value``)."""
    cdef Py_ssize_t n = size_of(a)
    cdef const unsigned char* pc = <const unsigned char*> data_ptr(c)
    cdef void* pa = data_ptr(a)
    cdef void* pb = NULL if b is None else data_ptr(b)
    cdef void* po = data_ptr(out)
    cdef float value_f = <float> value
    cdef bint f32 = is_f32(a)
    with nogil:
        if f32:
            select_kernel(pc, <const float*> pa, <const float*> pb, value_f, <float*> po, n,
                          threads)
        else:
            select_kernel(pc, <const double*> pa, <const double*> pb, value, <double*> po, n,
                          threads)
    return out


def masked_fill(a, mask, value, out=None, n_threads=1):
    """``out = value where mask else a``, elementwise (``value`` cast to ``a``'s dtype).

    Shape:
        a, mask, out: ``(*)``, all the same.
    """
    check_array(a, "a")
    _condition(mask, "mask", a.shape)
    out = output_like(out, a)
    cdef int threads = check_threads(n_threads)
    return _select(mask, a, None, float(value), out, threads)


def where_backward(condition, grad, need_a=True, need_b=True, n_threads=1):
    """``(ga, gb) = (where(condition, grad, 0), where(condition, 0, grad))`` in one pass;
    ``None`` for the one not needed.  ``grad`` may be one value broadcast to the shape
    (every stride 0, what ``.sum().backward()`` sends): it is then read block by block,
    not copied.

    Shape:
        condition, grad, ga, gb: ``(*)``, all the same.
    """
    if not isinstance(grad, np.ndarray):
        check_array(grad, "grad")              # raises the TypeError naming `grad`
    _condition(condition, "condition", grad.shape)
    g, grad_block = grad_operand(grad, grad)
    cdef int threads = check_threads(n_threads)
    cdef Py_ssize_t n = size_of(grad)
    shape = grad.shape
    ga = np.empty(shape, dtype=grad.dtype) if need_a else None
    gb = np.empty(shape, dtype=grad.dtype) if need_b else None
    if ga is None and gb is None:
        return None, None
    cdef const unsigned char* pc = <const unsigned char*> data_ptr(condition)
    cdef void* pg = data_ptr(g)
    cdef void* pa = NULL if ga is None else data_ptr(ga)
    cdef void* pb = NULL if gb is None else data_ptr(gb)
    cdef bint f32 = is_f32(g)
    cdef bint block = grad_block
    with nogil:
        if f32:
            where_backward_kernel(pc, <const float*> pg, <float*> pa, <float*> pb, n,
                                  block, threads)
        else:
            where_backward_kernel(pc, <const double*> pg, <double*> pa, <double*> pb, n,
                                  block, threads)
    return ga, gb


# --------------------------------------------------------------------------- copies

cdef inline void _copy_chunk(int64_t task, int64_t per_row, const intptr_t* src,
                             const int64_t* row_bytes, const int64_t* offset,
                             const int64_t* first, char* out, int64_t out_row,
                             int n_inputs) noexcept nogil:
    # chunk `task` of the copy: row task // per_row, chunk task % per_row of that row
    cdef int64_t o = task // per_row, r = task % per_row, begin, length
    cdef int lo = 0, hi = n_inputs - 1, mid
    while lo < hi:            # the input it belongs to: the last i with first[i] <= r
        mid = (lo + hi + 1) // 2
        if first[mid] <= r:
            lo = mid
        else:
            hi = mid - 1
    begin = (r - first[lo]) * CHUNK
    length = row_bytes[lo] - begin
    if length > CHUNK:
        length = CHUNK
    memcpy(out + o * out_row + offset[lo] + begin,
           <const char*> src[lo] + o * row_bytes[lo] + begin, length)


cdef void concat_kernel(const intptr_t* src,      # IN  start of each input (n_inputs,)
                        const int64_t* row_bytes, # IN  bytes of one row of each input
                        const int64_t* offset,    # IN  byte offset of each input in an out row
                        const int64_t* first,     # IN  first chunk of each input in a row (n_inputs + 1,)
                        char* out,                # OUT (outer, out_row) bytes
                        int64_t outer, int64_t out_row, int n_inputs,
                        int n_threads) noexcept nogil:
    cdef int64_t per_row = first[n_inputs]
    cdef int64_t task
    if n_threads <= 1:
        for task in range(outer * per_row):
            _copy_chunk(task, per_row, src, row_bytes, offset, first, out, out_row, n_inputs)
        return
    for task in prange(outer * per_row, num_threads=n_threads, schedule="dynamic"):
        _copy_chunk(task, per_row, src, row_bytes, offset, first, out, out_row, n_inputs)


# Alike by shape (duplicates): concat's checks of each input and _condition's of a mask
# raise the same kinds of error for different expectations (dtype of arrays[0], bool).
def concat(arrays, axis, out, n_threads=1):
    """Copy ``arrays`` into ``out``, their concatenation along ``axis``.

    Args:
        arrays: a non-empty sequence of C-contiguous arrays of one dtype (any dtype) and one
            number of dimensions, equal in every size but ``axis``.
        axis: the dimension to join along, in ``[0, ndim)``.
        out: C-contiguous, writeable, of their dtype and of the concatenated shape.
        n_threads: threads for copies of at least ``4 * _base.parallel_min()`` bytes.

    Returns:
        ``out``.
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Invalid argument `arrays`: expected at least one array. Received: []")
    cdef int threads = check_threads(n_threads)
    first_array = arrays[0]
    for i, x in enumerate(arrays):
        name = f"arrays[{i}]"
        if not isinstance(x, np.ndarray):
            raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray. "
                            f"Received: {name} of type {type(x).__name__}")
        if x.dtype != first_array.dtype:
            raise TypeError(f"Invalid argument `{name}`: expected dtype {first_array.dtype} "
                            f"(as arrays[0]). Received: {name}.dtype={x.dtype}")
        if not x.flags.c_contiguous:
            raise ValueError(f"Invalid argument `{name}`: expected a C-contiguous array. "
                             f"Received a non-contiguous array of shape {x.shape}")
    ndim = first_array.ndim
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < ndim:
        raise ValueError(f"Invalid argument `axis`: expected an int in [0, {ndim}). "
                         f"Received: axis={axis!r}")
    axis = int(axis)
    for i, x in enumerate(arrays):
        if x.ndim != ndim or x.shape[:axis] != first_array.shape[:axis] or \
                x.shape[axis + 1:] != first_array.shape[axis + 1:]:
            raise ValueError(f"Invalid argument `arrays[{i}]`: expected the sizes of arrays[0] "
                             f"{first_array.shape} in every dimension but {axis}. "
                             f"Received: arrays[{i}].shape={x.shape}")
    shape = first_array.shape[:axis] + (sum(x.shape[axis] for x in arrays),) + \
        first_array.shape[axis + 1:]
    if not isinstance(out, np.ndarray) or out.dtype != first_array.dtype or out.shape != shape \
            or not out.flags.c_contiguous or not out.flags.writeable:
        received = (f"out.shape={out.shape}, out.dtype={out.dtype}, contiguous="
                    f"{out.flags.c_contiguous}, writeable={out.flags.writeable}"
                    if isinstance(out, np.ndarray) else f"out of type {type(out).__name__}")
        raise ValueError(f"Invalid argument `out`: expected a writeable C-contiguous array of "
                         f"shape {shape} and dtype {first_array.dtype}. Received: {received}")
    cdef int n_inputs = len(arrays)
    cdef int64_t outer = 1
    for size in shape[:axis]:
        outer *= size
    cdef int64_t item = first_array.itemsize
    cdef int64_t tail = item
    for size in shape[axis + 1:]:
        tail *= size
    src_a = np.empty(n_inputs, dtype=np.intp)
    row_a = np.empty(n_inputs, dtype=np.int64)
    offset_a = np.empty(n_inputs, dtype=np.int64)
    first_a = np.empty(n_inputs + 1, dtype=np.int64)
    cdef intptr_t[::1] src = src_a
    cdef int64_t[::1] row_bytes = row_a
    cdef int64_t[::1] offset = offset_a
    cdef int64_t[::1] first = first_a
    cdef int64_t at = 0, chunks = 0
    cdef int k
    for k in range(n_inputs):
        x = arrays[k]
        src[k] = <intptr_t> cnp.PyArray_DATA(<cnp.ndarray> x)
        row_bytes[k] = x.shape[axis] * tail
        offset[k] = at
        first[k] = chunks
        at += row_bytes[k]
        chunks += (row_bytes[k] + CHUNK - 1) // CHUNK
    first[n_inputs] = chunks
    if outer == 0 or at == 0:
        return out
    cdef int team = _team(outer * at // 4, threads)
    cdef char* po = <char*> cnp.PyArray_DATA(<cnp.ndarray> out)
    with nogil:
        concat_kernel(&src[0], &row_bytes[0], &offset[0], &first[0], po, outer, at, n_inputs,
                      team)
    return out


# --------------------------------------------------------------------------- materialize

cdef void materialize_kernel(const char* src,          # IN  the view's first element
                             const int64_t* shape,     # IN  (ndim - 1,) outer sizes
                             const int64_t* strides,   # IN  (ndim - 1,) outer byte strides
                             int n_outer, int64_t rows, int64_t row_len, int64_t item,
                             bint broadcast_row,       # the last axis has stride 0
                             char* out,                # OUT (rows, row_len) C-contiguous
                             int n_threads) noexcept nogil:
    cdef int64_t r, rem, offset, j, row_bytes = row_len * item
    cdef int d
    cdef char* dst
    cdef const char* s
    for r in prange(rows, schedule="static", num_threads=n_threads):
        # the source row of output row r: unravel r over the outer sizes, apply the strides
        rem = r
        offset = 0
        for d in range(n_outer - 1, -1, -1):
            offset = offset + (rem % shape[d]) * strides[d]
            rem = rem // shape[d]
        s = src + offset
        dst = out + r * row_bytes
        if not broadcast_row:
            memcpy(dst, s, row_bytes)
        elif item == 4:
            for j in range(row_len):
                memcpy(dst + 4 * j, s, 4)
        else:
            for j in range(row_len):
                memcpy(dst + item * j, s, item)


def materialize(a, n_threads=1):
    """A new C-contiguous copy of the array view ``a`` (any dtype), made by threads when it is
    large: ``a``'s last axis must be contiguous (stride = itemsize) or broadcast (stride 0,
    as in the gradient that ``expand`` or ``sum`` sends back); its other axes may have any
    strides, 0 included.  Each output row is one thread's memcpy (or fill), so the copy is
    the same for any thread count.  Anything else, or under ``4 * _base.parallel_min()`` bytes,
    is ``np.array(a, order="C")``.
    """
    if not isinstance(a, np.ndarray):
        raise TypeError(f"Invalid argument `a`: expected a numpy.ndarray. "
                        f"Received: a of type {type(a).__name__}")
    cdef int threads = check_threads(n_threads)
    cdef int last = a.ndim - 1              # (explicit: this module turns wraparound off)
    if threads <= 1 or last < 1 or a.nbytes < 4 * parallel_min() or a.dtype.hasobject \
            or a.strides[last] not in (0, a.itemsize) or a.shape[last] * a.itemsize < 256:
        return np.array(a, order="C")
    out = np.empty(a.shape, dtype=a.dtype)
    cdef int n_outer = last
    shape_a = np.asarray(a.shape[:last], dtype=np.int64)
    strides_a = np.asarray(a.strides[:last], dtype=np.int64)
    cdef int64_t[::1] shape = shape_a
    cdef int64_t[::1] strides = strides_a
    cdef int64_t rows = 1
    for size in a.shape[:last]:
        rows *= size
    cdef int64_t row_len = a.shape[last]
    cdef int64_t item = a.itemsize
    cdef bint broadcast_row = a.strides[last] == 0
    cdef const char* src = <const char*> cnp.PyArray_DATA(<cnp.ndarray> a)
    cdef char* dst = <char*> cnp.PyArray_DATA(<cnp.ndarray> out)
    with nogil:
        materialize_kernel(src, &shape[0], &strides[0], n_outer, rows, row_len, item,
                           broadcast_row, dst, threads if rows > 1 else 1)
    return out
