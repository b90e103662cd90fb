"""Type stubs for minnet._ext.optim_kernels (the fused Adam and SGD updates)."""
from typing import Optional

import numpy as np

def adam_step(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, vmax: Optional[np.ndarray],
              weight: float, beta_2: float, bias_correction2_sqrt: float, epsilon: float,
              step_size: float, n_threads: int = ...) -> None: ...
def sgd_step(p: np.ndarray, g: np.ndarray, buf: Optional[np.ndarray], momentum: float,
             dampening: float, nesterov: bool, update_buffer: bool, lr: float,
             n_threads: int = ...) -> None: ...
