"""Type stubs for minnet._ext.winograd_kernels (Winograd F(2x2, 3x3), NCHW and NHWC)."""
from typing import Optional

import numpy as np

WINOGRAD: bool
MIN_PIXELS: int
MIN_CHANNELS: int
BLOCK_TILES: int

def use_winograd(method: str, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, c: int,
                 f: int, pixels: int) -> bool: ...
def winograd_conv2d(x: np.ndarray, w: np.ndarray, bias: Optional[np.ndarray], y: np.ndarray,
                    pt: int, pl: int, flip: bool, n_threads: int,
                    channels_last: bool = False) -> np.ndarray: ...
