"""Type stubs for minnet._ext.attention_kernels (fused blocked attention, online softmax)."""
from typing import Optional, Tuple

import numpy as np

DEFAULT_BLOCK_Q: int
DEFAULT_BLOCK_K: int

def attention_forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
                      causal: bool = ..., kv_len: Optional[np.ndarray] = ...,
                      mask: Optional[np.ndarray] = ..., out: Optional[np.ndarray] = ...,
                      n_threads: int = ..., block: Tuple[int, int] = ...
                      ) -> Tuple[np.ndarray, np.ndarray]: ...
def attention_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray,
                       lse: np.ndarray, grad: np.ndarray, scale: float, causal: bool = ...,
                       kv_len: Optional[np.ndarray] = ..., mask: Optional[np.ndarray] = ...,
                       dq: Optional[np.ndarray] = ..., dk: Optional[np.ndarray] = ...,
                       dv: Optional[np.ndarray] = ..., n_threads: int = ...,
                       block: Tuple[int, int] = ...
                       ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def _set_isa(level: int) -> int: ...
