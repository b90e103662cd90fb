"""PyTorch's device methods on every layer and model: minnet runs on the CPU only.

``layer.to("cpu")``, ``layer.cpu()`` return the layer unchanged, so PyTorch code that moves a
module to the CPU runs as it is; any other device (``"cuda"``, ``"mps"``) and ``.cuda()`` are
refused with the way to a GPU: move the model to PyTorch with ``minnet.interop``.
"""
__all__ = ["PyTorchDeviceMethods"]


def _cpu_only_message(call):
    return (f"{call}: minnet runs on the CPU only; there are no GPU devices. To train this model "
            f"on a GPU, move it to PyTorch: `module = minnet.interop.to_torch(model)`, then "
            f"`module.to('cuda')` (docs/moving_to_pytorch.md).")


class PyTorchDeviceMethods:
    """``to``, ``cuda`` and ``cpu`` as ``torch.nn.Module`` has them (mixed into ``Layer``)."""

    def to(self, device=None, dtype=None):
        """PyTorch's ``module.to(device)``: minnet runs on the CPU only, so ``"cpu"`` returns
        the layer unchanged and any other device is refused with the way to a GPU."""
        if dtype is not None:
            raise TypeError(f"Invalid argument `dtype` of {type(self).__name__}.to: minnet layers "
                            f"keep the dtype they were built with. Create the layer with "
                            f"`dtype=...` (or `mn.config.set_floatx(...)`) instead. "
                            f"Received: dtype={dtype!r}")
        if device is None or str(device).split(":", 1)[0] == "cpu":
            return self
        raise ValueError(_cpu_only_message(f"{type(self).__name__}.to({str(device)!r})"))

    def cuda(self, device=None):
        """PyTorch's ``module.cuda()``: refused (minnet runs on the CPU only), with the way to a GPU."""
        raise ValueError(_cpu_only_message(f"{type(self).__name__}.cuda()"))

    def cpu(self):
        """PyTorch's ``module.cpu()``: the layer itself (minnet runs on the CPU only)."""
        return self
