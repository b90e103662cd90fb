"""The bridge to PyTorch: move a model across, check that two models agree, share weights.

minnet is for learning; PyTorch is where a project goes next (GPUs, many machines).
This package moves a ``Sequential`` model to an equivalent ``torch.nn.Sequential`` and
back, compares the two numerically, and writes weights in PyTorch's ``state_dict``
naming as a plain ``.npz`` file (no pickle)::

    import minnet.interop as interop
    module = interop.to_torch(model)                      # torch.nn.Sequential, same weights
    model2 = interop.from_torch(module, input_shape=(1, 28, 28))
    print(interop.compare(model, module, x))              # table of max differences
    interop.save_torch_state_dict(model, "weights.npz")   # 0.weight, 0.bias, 1.running_mean, ...

PyTorch is optional (``pip install torch``): it is imported inside the functions that
need it, and nothing else in minnet imports it.  ``state_dict``,
``save_torch_state_dict`` and ``load_torch_state_dict`` work without it.

The modules, by job:

* ``plan``: a model walked into ``Step`` records (one per torch module), the image layout
  tracked from layer to layer, and each step's state as ``Slot`` records;
* ``state_dicts``: ``state_dict``, ``save_torch_state_dict``, ``load_torch_state_dict``;
* ``convert``: ``to_torch`` and ``from_torch``, over ``torch_modules`` (the torch module of
  each step, and minnet's few ``nn`` subclasses, e.g. ``KerasConv1d`` for (N, L, C) input)
  and ``layers_from_torch`` (the minnet layer of each torch module);
* ``comparison``: ``compare``, ``ComparisonReport``, ``ComparisonRow``;
* ``attention``: ``mha_to_torch``, ``mha_from_torch``, ``mha_state_dict``,
  ``load_mha_state_dict`` (``MultiHeadAttention`` <-> ``torch.nn.MultiheadAttention``);
* ``torch_support``: the lazy ``import torch``.

(The modules are named so that none shadows a function: ``interop.compare`` and
``interop.state_dict`` are the functions.)

Layouts.  The torch side is always PyTorch's NCHW.  A channels_last minnet model (the
default image layout) stays exact across the bridge: ``compare`` permutes NHWC input to
NCHW at the boundary (and image-shaped outputs and input gradients back), BatchNorm's
momentum is translated (torch ``momentum`` = 1 - Keras ``momentum``), and the columns of a
Dense kernel that follows a channels_last ``Flatten`` are permuted from minnet's (H, W, C)
order to torch's (C, H, W) order (and back).  Weight layouts need nothing: minnet's are
PyTorch's whatever the data layout.  Sequences keep minnet's layout on the torch side: a
channels_last ``Conv1D`` (``(N, L, C)``) becomes minnet's ``KerasConv1d``, which
transposes to torch's ``(N, C, L)`` and back around ``nn.Conv1d``.

Module numbering: each minnet layer becomes one or more torch modules, numbered in
order.  A ``Dense`` or ``Conv2D`` with ``activation=`` becomes two (the ``Linear`` /
``Conv2d`` at index ``i``, the activation at ``i + 1``); ``GlobalAveragePooling2D``
becomes ``AdaptiveAvgPool2d(1)`` + ``Flatten``; a strided ``Conv2D`` with
``padding="same"`` becomes ``ZeroPad2d`` + ``Conv2d``.  ``state_dict(model)`` uses the
same numbering, so its keys are exactly ``to_torch(model).state_dict().keys()``.
"""
from minnet.interop.comparison import ComparisonReport, ComparisonRow, compare
from minnet.interop.convert import from_torch, to_torch
from minnet.interop.state_dicts import load_torch_state_dict, save_torch_state_dict, state_dict
from minnet.interop.attention import (load_mha_state_dict, mha_from_torch, mha_state_dict,
                                      mha_to_torch)

__all__ = ["to_torch", "from_torch", "compare", "ComparisonReport", "ComparisonRow",
           "state_dict", "save_torch_state_dict", "load_torch_state_dict"]
__all__ += ["mha_to_torch", "mha_from_torch", "mha_state_dict", "load_mha_state_dict"]
