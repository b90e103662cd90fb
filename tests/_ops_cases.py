"""The input table shared by tests/ops: each case is (op name, builders of the positional
arguments from a rng, keyword arguments). test_keras_oracle.py runs every case against Keras,
test_numpy_reference.py against NumPy where NumPy has the op."""
import numpy as np

F32 = "float32"


def f(*shape, dtype=F32, low=-2.0, high=2.0):
    return lambda r: r.uniform(low, high, shape).astype(dtype)


def pos(*shape, dtype=F32):
    return f(*shape, dtype=dtype, low=0.2, high=2.0)


def unit(*shape):
    return f(*shape, low=-0.9, high=0.9)


def ints(*shape, high=5, dtype="int32"):
    return lambda r: r.integers(0, high, shape).astype(dtype)


def const(value):
    return lambda r: value


def spd(n):
    def make(r):
        a = r.normal(size=(n, n))
        return (a @ a.T + n * np.eye(n)).astype(F32)
    return make


UNARY = ["abs", "negative", "square", "sqrt", "exp", "expm1", "log1p", "sin", "cos", "tan", "tanh", "sinh",
         "cosh", "arctan", "arcsinh", "sign", "floor", "ceil", "round", "trunc", "reciprocal", "relu", "relu6",
         "sigmoid", "softplus", "softsign", "silu", "log_sigmoid", "hard_sigmoid", "hard_silu", "elu", "selu",
         "gelu", "celu", "hard_tanh", "hard_shrink", "soft_shrink", "tanh_shrink", "squareplus", "sparse_plus",
         "sparse_sigmoid", "erf", "cbrt", "exp2", "deg2rad", "rad2deg", "isnan", "isfinite", "signbit",
         "leaky_relu", "logical_not", "ravel", "copy", "sinc", "fabs", "rsqrt_pos", "log_pos", "log2_pos",
         "log10_pos", "arcsin", "arccos", "arctanh", "erfinv", "arccosh_big", "softmax", "log_softmax"]

CASES = []
for _name in UNARY:
    if _name.endswith("_pos"):
        CASES.append((_name[:-4], [pos(3, 4)], {}))
    elif _name in ("arcsin", "arccos", "arctanh", "erfinv"):
        CASES.append((_name, [unit(3, 4)], {}))
    elif _name == "arccosh_big":
        CASES.append(("arccosh", [f(3, 4, low=1.2, high=3.0)], {}))
    else:
        CASES.append((_name, [f(3, 4)], {}))

BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "hypot", "logaddexp",
          "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "mod", "fmod",
          "floor_divide", "logaddexp2", "heaviside", "fmax", "fmin", "copysign_skip"]
for _name in BINARY:
    if _name.endswith("_skip"):
        continue
    CASES.append((_name, [f(3, 4), f(4)], {}))
CASES += [
    # dtype promotion: int with Python float, int32 with float32, int8 with int, bool
    ("add", [ints(3), const(1.5)], {}), ("add", [ints(3), ints(3, dtype="int8")], {}),
    ("multiply", [ints(3, dtype="int8"), const(2)], {}), ("add", [f(3, dtype="float64"), f(3)], {}),
    ("add", [ints(3, dtype="uint8"), ints(3, dtype="int8")], {}), ("divide", [ints(3), ints(3, high=3)], {}),
    ("power", [pos(3, 4), f(3, 4)], {}), ("power", [pos(3), const(2)], {}),
    ("divide_no_nan", [f(4), lambda r: np.array([0, 1, 0, 2], F32)], {}),
    ("matmul", [f(2, 3, 4), f(4, 5)], {}), ("matmul", [f(4), f(4, 2)], {}), ("dot", [f(3, 4), f(4, 2)], {}),
("tensordot", [f(2, 3, 4), f(3, 4, 5)], {}),
    ("tensordot", [f(2, 3), f(3, 4)], {"axes": 1}), ("einsum", [const("ij,jk->ik"), f(2, 3), f(3, 4)], {}),
    ("einsum", [const("bij,bjk->bik"), f(2, 2, 3), f(2, 3, 2)], {}), ("outer", [f(3), f(4)], {}),
    ("inner", [f(2, 3), f(4, 3)], {}), ("vdot", [f(3), f(3)], {}), ("kron", [f(2, 2), f(2, 3)], {}),
    ("cross", [f(4, 3), f(4, 3)], {}), ("transpose", [f(2, 3, 4)], {}), ("transpose", [f(2, 3, 4)], {"axes": (1, 0, 2)}),
    ("reshape", [f(2, 6)], {"newshape": (3, -1)}), ("expand_dims", [f(2, 3)], {"axis": 1}),
    ("expand_dims", [f(2, 3)], {"axis": -1}), ("squeeze", [f(2, 1, 3, 1)], {}), ("squeeze", [f(2, 1, 3)], {"axis": 1}),
    ("concatenate", [lambda r: [r.normal(size=(2, 3)).astype(F32), r.normal(size=(2, 2)).astype(F32)]], {"axis": 1}),
    ("stack", [lambda r: [r.normal(size=(2, 3)).astype(F32)] * 3], {"axis": 1}),
    ("split", [f(6, 2), const(3)], {}), ("split", [f(6, 2), const([1, 4])], {"axis": 0}),
    ("array_split", [f(7, 2), const(3)], {}), ("hstack", [lambda r: [np.ones((2, 1), F32), np.zeros((2, 2), F32)]], {}),
    ("vstack", [lambda r: [np.ones(3, F32), np.zeros(3, F32)]], {}), ("moveaxis", [f(2, 3, 4), const(0), const(-1)], {}),
    ("swapaxes", [f(2, 3, 4), const(0), const(2)], {}), ("flip", [f(2, 3)], {"axis": 1}), ("flip", [f(2, 3)], {}),
    ("roll", [f(2, 5)], {"shift": 2, "axis": 1}), ("roll", [f(2, 5)], {"shift": -3}), ("rot90", [f(2, 3)], {}),
    ("tile", [f(2, 3), const((2, 1))], {}), ("repeat", [f(2, 3), const(2)], {"axis": 1}), ("repeat", [f(2, 3), const(2)], {}),
    ("broadcast_to", [f(3), const((2, 3))], {}),
    ("pad", [f(2, 3), const(((1, 0), (2, 1)))], {}), ("pad", [f(2, 3), const(((1, 1), (2, 2)))], {"mode": "reflect"}),
    ("pad", [f(2, 3), const(((1, 1), (1, 1)))], {"mode": "symmetric"}),
    ("pad", [f(2, 3), const(((1, 1), (1, 1)))], {"constant_values": 5.0}),
    ("take", [f(5, 3), lambda r: np.array([4, 0, -1])], {"axis": 0}), ("take", [f(5, 3), lambda r: np.array([[1, 2]])], {}),
    ("take_along_axis", [f(3, 4), lambda r: np.array([[0], [3], [1]])], {"axis": 1}),
    ("tril", [f(3, 3)], {}), ("triu", [f(3, 4)], {"k": 1}), ("diagonal", [f(3, 4)], {}), ("diag", [f(3)], {"k": 1}),
    ("diag", [f(3, 3)], {}), ("trace", [f(3, 3)], {}), ("diagflat", [f(2, 2)], {}),
    ("sum", [f(3, 4)], {}), ("sum", [f(3, 4)], {"axis": 0, "keepdims": True}), ("sum", [ints(3, 4)], {}),
    ("sum", [lambda r: r.random((3,)) > 0.5], {}), ("mean", [f(3, 4)], {"axis": -1}), ("mean", [ints(3, 4)], {}),
    ("max", [f(3, 4)], {"axis": 1}), ("min", [f(3, 4)], {}), ("max", [f(3, 4)], {"axis": 0, "initial": 1.0}),
    ("amax", [f(3, 4)], {"axis": (0, 1)}), ("prod", [f(3, 4)], {"axis": 1}), ("var", [f(3, 4)], {"axis": 0}),
    ("std", [f(3, 4)], {}), ("all", [lambda r: r.random((3, 4)) > 0.2], {"axis": 1}), ("any", [f(3, 4)], {}),
    ("argmax", [f(3, 4)], {"axis": 1}), ("argmin", [f(3, 4)], {}), ("argmax", [f(3, 4)], {"axis": 0, "keepdims": True}),
    ("count_nonzero", [ints(3, 4, high=2)], {"axis": 0}), ("cumsum", [f(3, 4)], {"axis": 1}), ("cumsum", [f(3, 4)], {}),
    ("cumprod", [f(3, 4)], {"axis": 0}), ("median", [f(3, 5)], {"axis": 1}), ("median", [f(4, 4)], {}),
    ("quantile", [f(3, 5), const(0.3)], {"axis": 1}), ("percentile", [f(7), const([10.0, 50.0, 90.0])], {}),
    ("quantile", [f(9), const(0.4)], {"method": "nearest"}), ("average", [f(3, 4)], {"axis": 1, "weights": np.arange(1.0, 5.0, dtype=F32)}),
    ("ptp", [f(3, 4)], {"axis": 1}), ("logsumexp", [f(3, 4)], {"axis": 1}), ("logsumexp", [f(3, 4)], {}),
    ("nansum", [lambda r: np.array([1.0, np.nan, 2.0], F32)], {}), ("nanmean", [lambda r: np.array([1.0, np.nan, 2.0], F32)], {}),
    ("nanmax", [lambda r: np.array([1.0, np.nan, 2.0], F32)], {}), ("nanmin", [lambda r: np.array([1.0, np.nan, 2.0], F32)], {}),
    ("nan_to_num", [lambda r: np.array([1.0, np.nan, np.inf, -np.inf], F32)], {}),
    ("sort", [f(3, 5)], {}), ("sort", [f(3, 5)], {"axis": 0}), ("argsort", [f(3, 5)], {}), ("top_k", [f(3, 6), const(2)], {}),
    ("searchsorted", [lambda r: np.array([1.0, 2.0, 3.0, 5.0], F32), lambda r: np.array([0.5, 2.0, 4.0], F32)], {}),
    ("digitize", [f(6), lambda r: np.array([-1.0, 0.0, 1.0], F32)], {}),
    ("bincount", [ints(10)], {}), ("where", [lambda r: r.random((3, 4)) > 0.5, f(3, 4), f(3, 4)], {}),
    ("where", [lambda r: r.random((3, 4)) > 0.5, f(3, 4), const(0.0)], {}),
    ("clip", [f(3, 4), const(-0.5), const(0.5)], {}), ("clip", [ints(3, 4), const(1), const(3)], {}),
    ("isclose", [f(3), f(3)], {}), ("logical_and", [lambda r: r.random(4) > 0.5, lambda r: r.random(4) > 0.5], {}),
    ("logical_xor", [lambda r: r.random(4) > 0.5, lambda r: r.random(4) > 0.5], {}),
    ("bitwise_and", [ints(4, high=8), ints(4, high=8)], {}), ("left_shift", [ints(4, high=8), ints(4, high=3)], {}),
    ("diff", [f(3, 5)], {}), ("diff", [f(5)], {"n": 2}), ("trapezoid", [f(5)], {}),
    ("correlate", [f(5), f(3)], {}), ("correlate", [f(5), f(3)], {"mode": "full"}), ("correlate", [f(5), f(3)], {"mode": "same"}),
    ("corrcoef", [f(3, 6)], {}), ("meshgrid", [f(3), f(2)], {}), ("meshgrid", [f(3), f(2)], {"indexing": "ij"}),
    ("vander", [f(3)], {}), ("isin", [ints(5), lambda r: np.array([1, 3])], {}),
    ("one_hot", [lambda r: np.array([0, 2, 1, -1])], {"num_classes": 3}),
    ("one_hot", [lambda r: np.array([[0, 2], [1, 1]])], {"num_classes": 3, "axis": 0}),
    ("multi_hot", [lambda r: np.array([[0, 2], [1, 1]])], {"num_classes": 4}),
    ("softmax", [f(3, 4)], {"axis": 0}), ("log_softmax", [f(2, 3, 4)], {"axis": 1}),
    ("glu", [f(3, 4)], {}), ("threshold", [f(3, 4), const(0.1), const(-1.0)], {}),
    ("gelu", [f(3, 4)], {"approximate": False}), ("leaky_relu", [f(3, 4)], {"negative_slope": 0.1}),
    ("normalize", [f(3, 4)], {}), ("normalize", [f(3, 4)], {"axis": 0, "order": 1}),
    ("moments", [f(3, 4, 5), const([0, 1])], {}), ("moments", [f(3, 4)], {"axes": [0], "keepdims": True}),
    ("batch_normalization", [f(3, 4), f(4), pos(4)], {"axis": -1, "offset": np.ones(4, F32), "scale": np.full(4, 2.0, F32)}),
    ("layer_normalization", [f(3, 4)], {}), ("rms_normalization", [f(3, 4)], {}),
    ("binary_crossentropy", [lambda r: (r.random((3, 4)) > 0.5).astype(F32), f(3, 4, low=0.05, high=0.95)], {}),
    ("binary_crossentropy", [lambda r: (r.random((3, 4)) > 0.5).astype(F32), f(3, 4)], {"from_logits": True}),
    ("categorical_crossentropy", [lambda r: np.eye(4, dtype=F32)[[0, 3, 1]], pos(3, 4)], {}),
    ("categorical_crossentropy", [lambda r: np.eye(4, dtype=F32)[[0, 3, 1]], f(3, 4)], {"from_logits": True}),
    ("sparse_categorical_crossentropy", [lambda r: np.array([0, 3, 1]), pos(3, 4)], {}),
    ("sparse_categorical_crossentropy", [lambda r: np.array([0, 3, 1]), f(3, 4)], {"from_logits": True}),
    ("sparse_categorical_crossentropy", [lambda r: np.array([[0], [3], [1]]), f(3, 4)], {"from_logits": True}),
    ("conv", [f(2, 6, 6, 3), f(3, 3, 3, 4)], {}), ("conv", [f(2, 7, 7, 3), f(3, 2, 3, 4)], {"strides": 2, "padding": "same"}),
    ("conv", [f(2, 6, 6, 4), f(3, 3, 2, 4)], {"padding": "same"}), ("conv", [f(2, 9, 3), f(3, 3, 2)], {"dilation_rate": 2}),
    ("conv", [f(2, 3, 6, 6), f(3, 3, 3, 2)], {"data_format": "channels_first", "padding": "same"}),
    ("conv", [f(2, 8, 3), f(4, 3, 2)], {"strides": 3, "padding": "same"}),
    ("depthwise_conv", [f(2, 6, 6, 3), f(3, 3, 3, 2)], {}),
    ("conv", [f(2, 4, 5, 5, 2), f(2, 3, 2, 2, 3)], {}), ("conv", [f(1, 5, 5, 5, 2), f(3, 3, 3, 2, 2)], {"padding": "same", "strides": 2}),
    ("conv", [f(1, 2, 5, 5, 4), f(2, 2, 2, 2, 4)], {"data_format": "channels_first", "dilation_rate": 2}),
    ("conv", [f(1, 4, 4, 4, 4), f(2, 2, 2, 2, 6)], {}),
    ("depthwise_conv", [f(1, 4, 5, 4, 2), f(2, 2, 2, 2, 3)], {"padding": "same"}),
    ("max_pool", [f(2, 4, 4, 6, 2)], {"pool_size": 2}), ("average_pool", [f(1, 5, 5, 5, 1)], {"pool_size": 2, "strides": 2, "padding": "same"}),
    ("max_pool", [f(1, 2, 4, 4, 4)], {"pool_size": (1, 2, 2), "data_format": "channels_first"}), ("depthwise_conv", [f(2, 5, 5, 2), f(2, 2, 2, 1)], {"padding": "same", "strides": 2}),
    ("separable_conv", [f(2, 6, 6, 3), f(3, 3, 3, 2), f(1, 1, 6, 4)], {}),
    ("conv_transpose", [f(2, 4, 4, 3), f(3, 3, 2, 3)], {"strides": 2}),
    ("conv_transpose", [f(2, 4, 4, 3), f(3, 3, 2, 3)], {"strides": 2, "padding": "same"}),
    ("conv_transpose", [f(2, 5, 5, 3), f(2, 2, 2, 3)], {"strides": 1, "padding": "same"}),
    ("conv_transpose", [f(2, 5, 3), f(3, 2, 3)], {"strides": 2}),
    ("conv_transpose", [f(1, 3, 4, 3, 2), f(2, 3, 2, 3, 2)], {"strides": 2}),
    ("conv_transpose", [f(1, 3, 3, 3, 2), f(3, 3, 3, 2, 2)], {"strides": (1, 2, 2), "padding": "same"}),
    ("conv_transpose", [f(1, 2, 3, 3, 3), f(2, 2, 2, 1, 2)], {"data_format": "channels_first", "dilation_rate": 2}), ("conv_transpose", [f(1, 6, 2), f(4, 3, 2)], {"strides": 3, "padding": "same"}),
    ("conv_transpose", [f(2, 5, 5, 3), f(3, 3, 2, 3)], {"strides": 2, "output_padding": 1, "padding": "same"}),
    ("max_pool", [f(2, 6, 6, 3)], {"pool_size": 2}), ("max_pool", [f(2, 5, 5, 3)], {"pool_size": 3, "strides": 2, "padding": "same"}),
    ("average_pool", [f(2, 6, 6, 3)], {"pool_size": 2}), ("average_pool", [f(2, 5, 5, 3)], {"pool_size": 2, "strides": 2, "padding": "same"}),
    ("max_pool", [f(2, 7, 3)], {"pool_size": 2}), ("average_pool", [f(2, 3, 6, 6)], {"pool_size": 3, "data_format": "channels_first"}),
    ("adaptive_average_pool", [f(2, 7, 5, 3)], {"output_size": (3, 2)}), ("adaptive_max_pool", [f(2, 6, 6, 3)], {"output_size": 4}),
    ("depth_to_space", [f(1, 2, 2, 8)], {"block_size": 2}), ("space_to_depth", [f(1, 4, 4, 2)], {"block_size": 2}),
    ("psnr", [pos(2, 4, 4, 1), pos(2, 4, 4, 1)], {"max_val": 2.0}), ("unfold", [f(1, 2, 5, 5)], {"kernel_size": 3}),
    ("fold", [f(1, 18, 9)], {"output_size": (5, 5), "kernel_size": 3}),
    ("inv", [spd(3)], {}), ("det", [spd(3)], {}), ("solve", [spd(3), f(3, 2)], {}), ("cholesky", [spd(3)], {}),
    ("slogdet", [spd(3)], {}), ("logdet", [spd(3)], {}), ("norm", [f(3, 4)], {}), ("norm", [f(3, 4)], {"axis": 1, "ord": 1}),
    ("norm", [f(3, 4)], {"ord": "fro", "axis": (0, 1)}), ("norm", [f(3, 4)], {"ord": np.inf, "axis": (0, 1)}),
    ("solve_triangular", [lambda r: np.triu(spd(3)(r)), f(3, 2)], {}), ("cholesky_inverse", [lambda r: np.linalg.cholesky(spd(3)(r))], {}),
    ("lstsq", [f(5, 3), f(5, 2)], {}), ("lu_factor", [spd(3)], {}), ("lu_factor", [f(3, 4)], {}), ("lu_factor", [f(2, 3, 3)], {}), ("pinv", [f(3, 4)], {}), ("matrix_rank", [f(3, 4)], {}),
    ("segment_sum", [f(5, 2), lambda r: np.array([0, 0, 1, 2, 2])], {"num_segments": 3}),
    ("segment_max", [f(5, 2), lambda r: np.array([0, 0, 1, 2, 2])], {"num_segments": 3}),
    ("extract_sequences", [f(2, 10), const(4), const(3)], {}), ("cdist", [f(3, 2), f(4, 2)], {}),
    ("in_top_k", [lambda r: np.array([1, 0, 2]), f(3, 4), const(2)], {}),
    ("cast", [f(3, 4), const("int32")], {}), ("cast", [ints(3), const("float16")], {}),
    ("saturate_cast", [f(4, low=-300.0, high=300.0), const("uint8")], {}),
    ("slice", [f(4, 5), const((1, 2)), const((2, 3))], {}),
    ("slice_update", [f(4, 5), const((1, 2)), f(2, 3)], {}),
    ("scatter", [lambda r: np.array([[0, 1], [2, 3], [0, 1]]), f(3), const((3, 4))], {}),
    ("scatter_update", [f(3, 4), lambda r: np.array([[0, 1], [2, 3]]), f(2)], {}),
    ("scatter_update", [f(3, 4), lambda r: np.array([[1]]), f(1, 4)], {}),
    ("unstack", [f(3, 2)], {}), ("eye", [const(3)], {"M": 4, "k": 1}), ("arange", [const(5)], {}),
    ("arange", [const(1.0), const(2.0), const(0.25)], {}), ("linspace", [const(0.0), const(1.0)], {"num": 5}),
    ("full", [const((2, 3)), const(7)], {}), ("zeros", [const((2,))], {}), ("ones_like", [ints(3)], {}),
    ("full_like", [f(2), const(3)], {}), ("tri", [const(3)], {}), ("logspace", [const(0.0), const(2.0)], {"num": 3}),
    ("identity", [const(2)], {}),
    ("select", [lambda r: [np.array([True, False, False]), np.array([False, True, False])], lambda r: [np.ones(3, F32),
                np.full(3, 2.0, F32)]], {"default": -1.0}),
    ("nonzero", [lambda r: np.array([[0, 1], [2, 0]])], {}), ("unravel_index", [lambda r: np.array([1, 5]), const((2, 3))], {}),
    ("histogram", [f(20)], {"bins": 4}), ("unique", [lambda r: np.array([3, 1, 3, 2])], {}),
    ("unique", [lambda r: np.array([3, 1, 3, 2])], {"return_counts": True, "return_inverse": True}),
    ("nanargmax", [lambda r: np.array([1.0, np.nan, 2.0], F32)], {}), ("nanvar", [lambda r: np.array([1.0, np.nan, 3.0], F32)], {}),
    ("nanstd", [lambda r: np.array([1.0, np.nan, 3.0], F32)], {}), ("nanprod", [lambda r: np.array([2.0, np.nan, 3.0], F32)], {}),
    ("nancumsum", [lambda r: np.array([2.0, np.nan, 3.0], F32)], {}), ("nanmedian", [lambda r: np.array([2.0, np.nan, 3.0, 9.0], F32)], {}),
    ("nanquantile", [lambda r: np.array([2.0, np.nan, 3.0, 9.0], F32), const(0.25)], {}),
    ("fliplr", [f(2, 3)], {}), ("flipud", [f(2, 3)], {}), ("dstack", [lambda r: [np.ones((2, 2), F32), np.zeros((2, 2), F32)]], {}),
    ("dsplit", [f(2, 2, 4), const(2)], {}), ("hsplit", [f(2, 4), const(2)], {}), ("vsplit", [f(4, 2), const([1])], {}),
    ("ldexp", [f(3), lambda r: np.array([1, 2, -1], "int32")], {}), ("gcd", [ints(4, high=12), ints(4, high=12)], {}),
    ("lcm", [ints(4, high=6), ints(4, high=6)], {}), ("nextafter", [f(3), f(3)], {}), ("bitwise_invert", [ints(4)], {}),
    ("right_shift", [ints(4, high=16), ints(4, high=3)], {}), ("geomspace", [const(1.0), const(8.0)], {"num": 4}),
    ("hamming", [const(5)], {}), ("kaiser", [const(5), const(2.0)], {}),
    ("zeros_like", [f(2, 2)], {"dtype": "int32"}), ("round", [f(4)], {"decimals": 1}), ("logical_or", [ints(4, high=2), ints(4, high=2)], {}),
("array", [lambda r: [[1, 2], [3, 4]]], {}), ("get_item", [f(3, 4), const(1)], {}),
    ("average", [f(3, 4)], {}), ("amin", [f(3, 4)], {"axis": 1, "keepdims": True}), ("diff", [ints(5, high=9)], {}),
    ("sparse_categorical_crossentropy", [lambda r: np.array([[0, 1], [2, 1]]), f(2, 2, 3)], {"from_logits": True}),
    ("categorical_crossentropy", [lambda r: np.eye(3, dtype=F32)[[[0, 1], [2, 1]]], f(2, 2, 3)], {"from_logits": True, "axis": -1}),
    ("binary_crossentropy", [lambda r: np.array([[0.0, 1.0]], F32), lambda r: np.array([[0.0, 1.0]], F32)], {}),
    ("ctc_loss", [lambda r: np.array([[1, 2, 2], [3, 1, 0]]), f(2, 7, 4), lambda r: np.array([3, 2]),
                  lambda r: np.array([7, 5])], {}),
    ("ctc_loss", [lambda r: np.array([[1, 1], [2, 0]]), f(2, 5, 3), lambda r: np.array([2, 1]),
                  lambda r: np.array([5, 4])], {"mask_index": 0}),
    ("ctc_decode", [f(2, 6, 4), lambda r: np.array([6, 4])], {}),
    ("ctc_decode", [f(2, 6, 4), lambda r: np.array([6, 4])], {"strategy": "beam_search", "beam_width": 5, "top_paths": 2}),
    ("ctc_decode", [f(3, 5, 3), lambda r: np.array([5, 5, 2])], {"strategy": "beam_search", "beam_width": 3,
                                                                   "mask_index": None}),
    ("ctc_decode", [f(1, 7, 5), lambda r: np.array([7])], {"strategy": "beam_search", "beam_width": 10, "top_paths": 3,
                                                          "mask_index": 2}),
    ("ctc_decode", [f(2, 6, 4), lambda r: np.array([6, 3])], {"merge_repeated": False, "mask_index": 3}), ("fft", [lambda r: (r.normal(size=(2, 6)).astype(F32), r.normal(size=(2, 6)).astype(F32))], {}),
    ("fft2", [lambda r: (r.normal(size=(2, 4, 3)).astype(F32), r.normal(size=(2, 4, 3)).astype(F32))], {}),
    ("ifft2", [lambda r: (r.normal(size=(4, 3)).astype(F32), r.normal(size=(4, 3)).astype(F32))], {}),
    ("rfft", [f(2, 7)], {}), ("rfft", [f(2, 7)], {"fft_length": 8}), ("rfft", [f(5)], {"fft_length": 4}),
    ("irfft", [lambda r: (r.normal(size=(2, 5)).astype(F32), r.normal(size=(2, 5)).astype(F32))], {}),
    ("irfft", [lambda r: (r.normal(size=(2, 5)).astype(F32), r.normal(size=(2, 5)).astype(F32))], {"fft_length": 9}),
    ("stft", [f(2, 32), const(8), const(4), const(8)], {}),
    ("istft", [lambda r: (r.normal(size=(2, 9, 5)).astype(F32), r.normal(size=(2, 9, 5)).astype(F32)), const(8), const(4),
               const(8)], {}),
    ("istft", [lambda r: (r.normal(size=(9, 5)).astype(F32), r.normal(size=(9, 5)).astype(F32)), const(8), const(4),
               const(8)], {"length": 30}),
    ("istft", [lambda r: (r.normal(size=(7, 5)).astype(F32), r.normal(size=(7, 5)).astype(F32)), const(6), const(3),
               const(8)], {}),
    ("istft", [lambda r: (r.normal(size=(7, 5)).astype(F32), r.normal(size=(7, 5)).astype(F32)), const(8), const(4),
               const(8)], {"center": False, "window": "hamming"}),
    ("stft", [f(20), const(6), const(3), const(8)], {"window": "hamming", "center": False}), ("rearrange", [f(2, 3, 4), const("b h w -> b (h w)")], {}),
    ("rearrange", [f(6, 4), const("(b h) w -> b w h")], {"b": 2}),
]


IMAGE_CASES = [
    ("resize", [f(2, 5, 6, 3)], {"size": (8, 4)}), ("resize", [f(2, 5, 6, 3)], {"size": (3, 9), "interpolation": "nearest"}),
    ("resize", [f(1, 4, 4, 2)], {"size": (7, 5), "interpolation": "bicubic"}), ("resize", [f(5, 6, 3)], {"size": (2, 3)}),
    ("resize", [f(2, 3, 5, 6)], {"size": (4, 4), "data_format": "channels_first"}),
    ("resize", [f(1, 6, 4, 1)], {"size": (3, 3), "crop_to_aspect_ratio": True}),
    ("resize", [f(1, 9, 11, 2)], {"size": (4, 5), "antialias": True}),
    ("resize", [f(1, 9, 11, 2)], {"size": (12, 4), "antialias": True, "interpolation": "bicubic"}),
    ("resize", [f(1, 4, 6, 1)], {"size": (6, 6), "pad_to_aspect_ratio": True}),
    ("rgb_to_grayscale", [f(2, 4, 4, 3)], {}), ("rgb_to_hsv", [f(2, 3, 3, 3, low=0.0, high=1.0)], {}),
    ("hsv_to_rgb", [f(2, 3, 3, 3, low=0.0, high=1.0)], {}),
    ("crop_images", [f(2, 6, 6, 3)], {"top_cropping": 1, "left_cropping": 2, "target_height": 3, "target_width": 2}),
    ("pad_images", [f(2, 3, 3, 1)], {"top_padding": 1, "left_padding": 2, "target_height": 6, "target_width": 6}),
    ("extract_patches", [f(2, 6, 6, 3)], {"size": 2}), ("gaussian_blur", [f(2, 6, 6, 2)], {"data_format": "channels_last"}),
    ("gaussian_blur", [f(1, 7, 7, 1)], {"kernel_size": (5, 5), "sigma": (1.5, 1.5), "data_format": "channels_last"}), ("sobel_edges", [f(2, 5, 5, 2)], {}),
    ("gaussian_blur", [f(1, 2, 6, 6)], {"data_format": "channels_first"}),
    ("affine_transform", [f(2, 5, 6, 2), lambda r: np.array([[1.1, 0.1, -0.5, 0.05, 0.9, 0.7, 0, 0],
                                                             [0.8, -0.2, 1.0, 0.1, 1.2, -0.3, 0, 0]], F32)], {}),
    ("affine_transform", [f(5, 6, 2), lambda r: np.array([1.0, 0.0, 1.5, 0.0, 1.0, -1.2, 0, 0], F32)],
     {"interpolation": "nearest", "fill_mode": "reflect"}),
    ("affine_transform", [f(1, 5, 6, 1), lambda r: np.array([0.7, 0.3, 2.5, -0.2, 1.3, -1.0, 0, 0], F32)],
     {"fill_mode": "wrap"}),
    ("map_coordinates", [f(4, 5), lambda r: r.uniform(-1, 5, (2, 3, 3)).astype(F32), const(1)], {}),
    ("extract_patches_3d", [f(2, 4, 5, 6, 2)], {"size": 2}),
    ("scale_and_translate", [f(1, 5, 6, 2), const((1, 8, 4, 2)), const([1.6, 0.7]), const([0.3, -0.2]), const((1, 2)),
                             const("bilinear")], {}),
    ("scale_and_translate", [f(1, 5, 6, 1), const((1, 3, 9, 1)), const([0.6, 1.5]), const([0.0, 0.5]), const((1, 2)),
                             const("lanczos3")], {"antialias": False}),
    ("scale_and_translate", [f(6, 5, 1), const((4, 7, 1)), const([0.7, 1.4]), const([0.1, 0.0]), const((0, 1)),
                             const("cubic")], {}),
    ("extract_patches_3d", [f(1, 5, 5, 5, 1)], {"size": (3, 2, 2), "strides": 2, "padding": "same"}),
    ("extract_patches_3d", [f(4, 4, 4, 2)], {"size": 2, "strides": 1, "dilation_rate": 2}),
    ("ssim", [f(2, 12, 13, 2, low=0.0, high=1.0), f(2, 12, 13, 2, low=0.0, high=1.0)], {}),
    ("ssim", [f(12, 12, 1, low=0.0, high=1.0), f(12, 12, 1, low=0.0, high=1.0)], {"filter_size": 5, "max_val": 2.0}),
    ("perspective_transform", [f(2, 6, 7, 2), lambda r: np.array([[0, 0], [5, 0], [0, 5], [5, 5]], F32),
                               lambda r: np.array([[1, 0], [5, 1], [0, 4], [4, 5]], F32)], {}),
    ("perspective_transform", [f(5, 5, 1), lambda r: np.array([[0, 0], [4, 0], [0, 4], [4, 4]], F32),
                               lambda r: np.array([[0.5, 0.2], [4, 0.3], [0.1, 3.5], [3.7, 4]], F32)],
     {"interpolation": "nearest", "fill_value": 1.0}),
    ("map_coordinates", [f(4, 5), lambda r: r.uniform(-1, 5, (2, 6)).astype(F32), const(0)], {"fill_mode": "mirror"}),
    ("map_coordinates", [f(4, 5), lambda r: r.uniform(-2, 6, (2, 6)).astype(F32), const(1)], {"fill_mode": "nearest"}), ("extract_patches", [f(1, 5, 5, 2)], {"size": (3, 2), "strides": 1}),
]
