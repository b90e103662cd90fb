"""Type stubs for minnet._ext.conv_nhwc_kernels (the channels_last conv kernels conv_kernels.pyx calls)."""
from typing import Any, Optional

import numpy as np

def nhwc_forward(x: np.ndarray, w2t: np.ndarray, bias: Optional[np.ndarray], y: np.ndarray,
                 g_obj: Any, n_threads: int, batched: bool, chunk: int, planes: bool) -> None: ...
def nhwc_backward(x: np.ndarray, w2: np.ndarray, w2t: np.ndarray, dy: np.ndarray,
                  dx: Optional[np.ndarray], dw2: Optional[np.ndarray], db: Optional[np.ndarray],
                  g_obj: Any, n_threads: int, batched: bool, chunk: int, n_parts: int,
                  planes: bool) -> None: ...
