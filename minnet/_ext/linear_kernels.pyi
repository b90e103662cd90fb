"""Type stubs for minnet._ext.linear_kernels (linear / fully connected kernels)."""
from typing import Optional, Tuple

import numpy as np

_Grads = Tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]

TRANSPOSED_MIN: int

def linear_forward(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None,
                   n_threads: int = 1, relu: bool = False) -> np.ndarray: ...
def linear_backward(x: np.ndarray, weight: np.ndarray, grad_output: np.ndarray,
                    need_input_grad: bool = True, need_weight_grad: bool = True,
                    need_bias_grad: bool = True, n_threads: int = 1) -> _Grads: ...
