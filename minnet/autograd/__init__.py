"""minnet's autograd: Tensor, Function (with ctx), the backward graph, no_grad, gradcheck."""
from .function import (AccumulateGrad, AnomalyError, BackwardNode, Context, Function, Node, detect_anomaly, enable_grad,
                       is_grad_enabled, no_grad, set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck
from .graph import graph_to_dot, print_graph
from .ops import unbroadcast
from .tensor import Parameter, Tensor, tensor

__all__ = ["Tensor", "Parameter", "tensor", "Function", "Context", "Node", "BackwardNode",
           "AccumulateGrad", "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled",
           "gradcheck", "GradcheckError", "detect_anomaly", "AnomalyError", "print_graph", "graph_to_dot", "unbroadcast"]
