"""Type stubs for minnet._ext.layernorm_kernels (compiled): row-wise layer norm forward/backward."""
from typing import Optional, Tuple

import numpy as np

def layernorm_forward(x: np.ndarray, gamma: Optional[np.ndarray] = ..., beta: Optional[np.ndarray] = ...,
                      eps: float = ..., n_threads: int = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def layernorm_backward(x: np.ndarray, grad: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                       gamma: Optional[np.ndarray] = ..., n_threads: int = ...
                       ) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]: ...
