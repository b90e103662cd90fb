"""PyTorch, imported on demand: minnet never needs it except inside ``minnet.interop``."""
import numpy as np

__all__ = ["require_torch", "torch_dtype"]


def require_torch():
    """The ``torch`` module, or ImportError saying how to install it."""
    try:
        import torch
    except ImportError as error:
        raise ImportError("minnet.interop needs PyTorch for this function. Install it with "
                          "`pip install torch`.") from error
    return torch


def torch_dtype(torch, dtype):
    """torch.float64 for a float64 minnet dtype, else torch.float32."""
    return torch.float64 if np.dtype(dtype) == np.float64 else torch.float32
