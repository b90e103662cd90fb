"""Type stubs for minnet._ext.conv_kernels (conv2d kernels, channels_first and channels_last)."""
from typing import Any, Literal, Optional, Tuple, Union

import numpy as np

_Pair = Union[int, Tuple[int, int]]
_Method = Literal["auto", "per_sample", "batched", "winograd"]
_Layout = Literal["channels_first", "channels_last"]
_Grads = Tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]

def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                     dilation: int) -> int: ...
def conv2d_forward(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None,
                   stride: _Pair = 1, padding: _Pair = 0, dilation: _Pair = 1,
                   out_size: Optional[Tuple[int, int]] = None, n_threads: int = 1,
                   method: _Method = "auto", data_format: _Layout = "channels_first") -> np.ndarray: ...
def conv2d_backward(x: np.ndarray, weight: np.ndarray, grad_output: np.ndarray,
                    stride: _Pair = 1, padding: _Pair = 0, dilation: _Pair = 1,
                    need_input_grad: bool = True, need_weight_grad: bool = True,
                    need_bias_grad: bool = True, n_threads: int = 1,
                    method: _Method = "auto", data_format: _Layout = "channels_first") -> _Grads: ...
def _plan(method: _Method, g_obj: Any, channels_last: bool,
          itemsize: int) -> Tuple[str, int, int]: ...
def gemm_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray, beta: float = 0.0,
             trans_a: bool = False, trans_b: bool = False, n_threads: int = 1,
             isa: int = -1) -> int: ...
