"""Type stubs for minnet._ext.reduce_kernels (threaded sums and means over one axis or all
elements, bit-identical for any thread count)."""
import numpy as np

def sum_axis(x: np.ndarray, axis: int | None, mean: bool = ..., n_threads: int = ...) -> np.ndarray: ...
