"""minnet's compiled kernels (Cython), the floor under minnet.autograd and minnet.functional.

Naming rule (issue #26): no module here shares a name with a module of minnet.functional.

* ``X_kernels`` (``conv_kernels.pyx``, ``pooling_kernels.pyx``, ...): the kernels of one op
  family, imported as ``from minnet._ext import conv_kernels``; ``X_kernels.pxd`` is its
  cimport interface and ``X_kernels.pyi`` its type stubs.  ``minnet.functional._conv`` is the
  differentiable op, ``minnet._ext.conv_kernels`` the loops it calls.
* ``_base``, ``_blas``, ``_openmp``, ``_memory``, ``_fastmath`` and ``_cyutility`` (generated
  by setup.py): the shared base every kernel module cimports (argument checks and thread
  teams, BLAS, OpenMP, the buffer cache, fast float math, Cython's utility code); they keep
  the leading underscore.
* ``include/``: every C header, named by the same rule (``include/linear_kernels.h`` for
  ``linear_kernels.pyx``, ``include/transpose_kernels.h`` for a header of shared loops,
  ``include/_fastmath.h`` for the base); setup.py puts the folder on the include path, so a
  module writes ``cdef extern from "transpose_kernels.h"``.
"""
