"""Type stubs for minnet._ext.unary_kernels (compiled)."""
import numpy as np

UNARY_OPS: dict[str, int]

def unary_forward(x: np.ndarray, op: str, out: np.ndarray | None = ...,
                  n_threads: int = ...) -> np.ndarray: ...
def unary_backward(saved: np.ndarray, grad: np.ndarray, op: str, out: np.ndarray | None = ...,
                   n_threads: int = ...) -> np.ndarray: ...
