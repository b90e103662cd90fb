"""Type stubs for minnet._ext.embedding_kernels (compiled)."""
import numpy as np

def embedding_backward(indices: np.ndarray, grad: np.ndarray, input_dim: int,
                       n_threads: int = ...) -> np.ndarray: ...
