"""The backward kernels read only the operands the requested gradients need.

``functional`` passes an uninitialised array (``np.empty``) where an operand is not saved
(the input of a layer whose weight gradient is not wanted, the weight when the input
gradient is not), so a kernel that read it would return garbage silently. Here the unused
operand is all NaN: any read that reaches an output turns it NaN, and the outputs must
equal those computed with a finite stand-in, for every method and layout.
"""
import numpy as np
import pytest

from minnet._ext import conv_kernels, linear_kernels

RNG = np.random.default_rng(7)

CONV_CASES = [  # (N, C, H, W), filters, kernel, stride, method
    ((2, 3, 9, 9), 4, 3, 1, "auto"),
    ((2, 3, 9, 9), 4, 3, 1, "per_sample"),
    ((2, 3, 9, 9), 4, 3, 1, "batched"),
    ((2, 32, 16, 16), 32, 3, 1, "auto"),        # Winograd under the auto rule
    ((2, 5, 11, 11), 6, 3, 2, "auto"),          # stride phases
    ((2, 5, 11, 11), 6, 3, 2, "batched"),
    ((2, 1, 10, 10), 4, 3, 1, "auto"),          # one channel: channels_last "planes"
    ((2, 4, 8, 8), 3, 1, 2, "auto"),            # 1x1 stride 2
    ((40, 4, 6, 6), 3, 3, 1, "auto"),           # several samples per GEMM (chunks)
]


def _image(shape, layout, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if layout == "channels_last" else x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
@pytest.mark.parametrize("shape, filters, k, stride, method", CONV_CASES)
def test_conv_backward_reads_no_unused_operand(shape, filters, k, stride, method, layout, dtype):
    x = _image(shape, layout, dtype)
    w = RNG.standard_normal((filters, shape[1], k, k)).astype(dtype)
    kw = dict(stride=stride, padding=k // 2, method=method, data_format=layout)
    dy = RNG.standard_normal(conv_kernels.conv2d_forward(x, w, **kw).shape).astype(dtype)
    # dX alone: x is not needed
    dx_ref, _, db_ref = conv_kernels.conv2d_backward(x, w, dy, need_weight_grad=False, **kw)
    dx, _, db = conv_kernels.conv2d_backward(np.full_like(x, np.nan), w, dy,
                                             need_weight_grad=False, **kw)
    np.testing.assert_array_equal(dx, dx_ref)
    np.testing.assert_array_equal(db, db_ref)
    assert np.isfinite(dx).all()
    # dW alone: the weight is not needed
    _, dw_ref, _ = conv_kernels.conv2d_backward(x, w, dy, need_input_grad=False, **kw)
    _, dw, _ = conv_kernels.conv2d_backward(x, np.full_like(w, np.nan), dy,
                                            need_input_grad=False, **kw)
    np.testing.assert_array_equal(dw, dw_ref)
    assert np.isfinite(dw).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k, m", [(64, 784, 256), (3, 5, 2), (64, 128, 10)])
def test_linear_backward_reads_no_unused_operand(n, k, m, dtype):
    x = RNG.standard_normal((n, k)).astype(dtype)
    w = RNG.standard_normal((m, k)).astype(dtype)
    dy = RNG.standard_normal((n, m)).astype(dtype)
    dx_ref, _, db_ref = linear_kernels.linear_backward(x, w, dy, need_weight_grad=False)
    dx, _, db = linear_kernels.linear_backward(np.full_like(x, np.nan), w, dy, need_weight_grad=False)
    np.testing.assert_array_equal(dx, dx_ref)
    np.testing.assert_array_equal(db, db_ref)
    _, dw_ref, _ = linear_kernels.linear_backward(x, w, dy, need_input_grad=False)
    _, dw, _ = linear_kernels.linear_backward(x, np.full_like(w, np.nan), dy, need_input_grad=False)
    np.testing.assert_array_equal(dw, dw_ref)
    assert np.isfinite(dx).all() and np.isfinite(dw).all()
