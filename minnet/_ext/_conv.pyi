"""Type stubs for minnet._ext._conv (convolution and linear kernels, NCHW)."""
from typing import Literal, Optional, Tuple, Union

import numpy as np

_Pair = Union[int, Tuple[int, int]]
_Method = Literal["auto", "per_sample", "batched", "winograd"]
_Grads = Tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]

def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                     dilation: int) -> int: ...
def im2col(x: np.ndarray, kernel_size: _Pair, stride: _Pair = 1, padding: _Pair = 0,
           dilation: _Pair = 1, out_size: Optional[Tuple[int, int]] = None,
           n_threads: int = 1) -> np.ndarray: ...
def col2im(cols: np.ndarray, input_shape: Tuple[int, int, int, int], kernel_size: _Pair,
           stride: _Pair = 1, padding: _Pair = 0, dilation: _Pair = 1,
           out_size: Optional[Tuple[int, int]] = None, n_threads: int = 1) -> np.ndarray: ...
def conv2d_forward(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None,
                   stride: _Pair = 1, padding: _Pair = 0, dilation: _Pair = 1,
                   out_size: Optional[Tuple[int, int]] = None, n_threads: int = 1,
                   method: _Method = "auto") -> np.ndarray: ...
def conv2d_backward(x: np.ndarray, weight: np.ndarray, grad_output: np.ndarray,
                    stride: _Pair = 1, padding: _Pair = 0, dilation: _Pair = 1,
                    need_input_grad: bool = True, need_weight_grad: bool = True,
                    need_bias_grad: bool = True, n_threads: int = 1,
                    method: _Method = "auto") -> _Grads: ...
def linear_forward(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None,
                   n_threads: int = 1, relu: bool = False) -> np.ndarray: ...
def linear_backward(x: np.ndarray, weight: np.ndarray, grad_output: np.ndarray,
                    need_input_grad: bool = True, need_weight_grad: bool = True,
                    need_bias_grad: bool = True, n_threads: int = 1) -> _Grads: ...
