"""Type stubs for minnet._ext.recurrent_kernels (fused LSTM/GRU/RNN sequence kernels)."""
from typing import Optional, Tuple

import numpy as np

LSTM: int
GRU: int
RNN_TANH: int
RNN_RELU: int

def gates_per_cell(mode: int) -> int: ...
def saved_per_step(mode: int) -> int: ...
def recurrent_forward(mode: int, x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                      b_ih: Optional[np.ndarray], b_hh: Optional[np.ndarray],
                      h0: Optional[np.ndarray], c0: Optional[np.ndarray],
                      mask: Optional[np.ndarray], reverse: bool = ..., write_seq: bool = ...,
                      save: bool = ..., n_threads: int = ...,
                      rmask: Optional[np.ndarray] = ...
                      ) -> Tuple[Optional[np.ndarray], np.ndarray, Optional[np.ndarray],
                                 Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]: ...
def recurrent_backward(mode: int, x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                       hprev: np.ndarray, cprev: Optional[np.ndarray], saved: np.ndarray,
                       mask: Optional[np.ndarray], reverse: bool, dy: Optional[np.ndarray],
                       dh_n: Optional[np.ndarray], dc_n: Optional[np.ndarray],
                       want_x: bool = ..., want_weights: bool = ..., want_bias: bool = ...,
                       n_threads: int = ..., rmask: Optional[np.ndarray] = ...) -> Tuple[Optional[np.ndarray], ...]: ...
