"""detach() vs clone(): what shares memory, what carries gradients.

* ``t.detach()`` shares ``t``'s memory and is cut from the graph: a constant.
* ``t.clone()`` copies the data and stays in the graph: gradients flow back through it.
* Modifying in place an array that backward still needs is detected (version counter).

Run:  python examples/clone_detach.py [--quick]
"""
import argparse

import numpy as np

import minnet as mn


def main(quick=False):
    x = mn.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)

    d = x.detach()
    print("detach shares memory:", np.shares_memory(d.data, x.data), "| requires_grad:", d.requires_grad)
    (x * d).sum().backward()            # d is a constant: d(x*d)/dx = d
    print("grad through x * x.detach():", x.grad)

    x.grad = None
    c = x.clone()
    print("clone shares memory:", np.shares_memory(c.data, x.data), "| grad_fn:", c.grad_fn.name())
    (x * c).sum().backward()            # both factors depend on x: 2x
    print("grad through x * x.clone():  ", x.grad)

    y = x.exp()                         # ExpBackward saves y for its backward
    with mn.no_grad():
        y.mul_(2)                       # ... and now y changed under it
    try:
        y.sum().backward()
    except RuntimeError as err:
        print("in-place change detected:", str(err).split(":")[0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-test mode (already fast)")
    main(parser.parse_args().quick)
