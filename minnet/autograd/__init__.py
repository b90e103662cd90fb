"""minnet's autograd: Tensor and its operations, Function (with ctx), the backward graph and
engine, grad/anomaly modes, ``grad`` (with ``create_graph``), hooks, gradcheck and
``autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp)."""
from . import functional
from .creation import (arange, bmm, cat, chunk, concat, concatenate, einsum, empty, empty_like, eye, flip,
                       from_numpy, full, full_like, gather, index_select, is_tensor, linspace, masked_fill,
                       matmul, numel, ones, ones_like, permute, rand, rand_like, randint, randint_like, randn,
                       randn_like, split, squeeze, stack, unsqueeze, where, zeros, zeros_like)
from .differentiate import backward, grad
from .function import (AccumulateGrad, BackwardNode, Context, Function, Node, RemovableHandle,
                       once_differentiable)
from .grad_mode import (AnomalyError, detect_anomaly, enable_grad, is_anomaly_enabled, is_grad_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import graph_to_dot, print_graph
from .op_helpers import unbroadcast
from .tensor import Parameter, Tensor, tensor

__all__ = ["Tensor", "Parameter", "tensor", "Function", "Context", "Node", "BackwardNode",
           "AccumulateGrad", "RemovableHandle", "once_differentiable", "no_grad", "enable_grad",
           "is_grad_enabled", "set_grad_enabled", "gradcheck", "gradgradcheck", "GradcheckError",
           "detect_anomaly", "is_anomaly_enabled", "AnomalyError", "print_graph", "graph_to_dot",
           "unbroadcast", "grad", "backward", "functional",
           "zeros", "ones", "full", "empty", "rand", "randn", "randint", "arange", "linspace", "eye",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
           "from_numpy", "cat", "concat", "concatenate", "stack", "where", "einsum", "matmul", "bmm", "gather",
           "index_select", "masked_fill", "split", "chunk", "squeeze", "unsqueeze", "permute", "flip",
           "is_tensor", "numel"]
