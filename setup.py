"""Build script for minnet's Cython kernels (minnet/_ext/*.pyx).

Everything that concerns compilation lives here, in one place:

* every ``minnet/_ext/*.pyx`` becomes an extension module, compiled with ``-O3``;
* OpenMP is switched on when a test compile with ``-fopenmp`` succeeds (detected, not
  guessed from the platform); otherwise the kernels build serially and
  ``minnet.show_config()`` says so;
* the Cython compiler directives are set once, below.  ``MINNET_DEBUG_BUILD=1`` turns
  bounds checking, wraparound and initialisation checks back on (a checked build for CI
  and for hunting out-of-bounds accesses);
* ``MINNET_ONLY=_conv,_blas`` builds only the named modules (a developer convenience
  for ``python setup.py build_ext --inplace``);
* a build from a source checkout (``pip install .``) also leaves a copy of each compiled
  module beside its ``.pyx``, so ``python -c "import minnet"`` run in the checkout (where
  the ``minnet/`` folder shadows the installed package) imports the same build.  The
  copies are git-ignored.
"""
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent.resolve()
EXT_DIR = HERE / "minnet" / "_ext"
DEBUG_BUILD = os.environ.get("MINNET_DEBUG_BUILD", "0") not in ("", "0", "false", "False")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG_BUILD,
    "wraparound": DEBUG_BUILD,
    "initializedcheck": DEBUG_BUILD,
    "cdivision": not DEBUG_BUILD,
    "nonecheck": DEBUG_BUILD,
    "embedsignature": True,
    "cpow": True,
}


def _openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or ([], []) when a test compile fails."""
    if os.environ.get("MINNET_NO_OPENMP", "0") not in ("", "0"):
        return [], []
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    if sys.platform == "win32":
        candidates = [(["/openmp"], [])]
    elif sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    source = textwrap.dedent(
        """
        #include <omp.h>
        #include <stdio.h>
        int main(void) {
            int n = 0;
            #pragma omp parallel reduction(+:n)
            n += 1;
            printf("%d", omp_get_max_threads() > 0 && n > 0);
            return 0;
        }
        """
    )
    for compile_args, link_args in candidates:
        tmp = tempfile.mkdtemp()
        try:
            src = os.path.join(tmp, "test_openmp.c")
            with open(src, "w") as f:
                f.write(source)
            objects = compiler.compile([src], output_dir=tmp, extra_postargs=compile_args)
            compiler.link_executable(objects, "test_openmp", output_dir=tmp, extra_postargs=link_args)
            return compile_args, link_args
        except Exception:  # the compiler said no: build serially
            continue
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return [], []


def _extensions():
    import numpy as np
    from Cython.Build import cythonize

    only = {m.strip() for m in os.environ.get("MINNET_ONLY", "").split(",") if m.strip()}
    omp_compile, omp_link = _openmp_flags()
    openmp = bool(omp_compile)
    print(f"minnet build: OpenMP {'ON' if openmp else 'OFF (serial kernels)'}; "
          f"debug (bounds-checked) build {'ON' if DEBUG_BUILD else 'OFF'}")
    if sys.platform == "win32":
        opt = ["/O2"]
    else:
        # -fno-trapping-math lets GCC vectorise `x > 0 ? a : b` loops (we never trap on FP)
        opt = ["-O3", "-fno-trapping-math", "-fno-strict-aliasing", "-Wno-unused-function",
               "-Wno-unreachable-code"]
        if DEBUG_BUILD:
            opt = ["-O1", "-g", "-Wno-unused-function"]
    macros = [
        ("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
        ("MINNET_OPENMP", "1" if openmp else "0"),
        ("MINNET_DEBUG_BUILD", "1" if DEBUG_BUILD else "0"),
    ]
    # Per-module flags. _optim: its update must round every operation as NumPy's ufuncs do
    # (no fused multiply-add), and its sqrt needs no errno check to vectorise (the module
    # calls no other libm function, so nothing else changes).
    module_flags = {} if sys.platform == "win32" else {"_optim": ["-ffp-contract=off", "-fno-math-errno"]}
    extensions = []
    for pyx in sorted(EXT_DIR.glob("*.pyx")):
        name = pyx.stem
        if only and name not in only:
            continue
        extensions.append(
            Extension(
                f"minnet._ext.{name}",
                [str(pyx.relative_to(HERE))],
                include_dirs=[np.get_include()],
                depends=[str(h.relative_to(HERE)) for h in sorted(EXT_DIR.glob("*.h"))],
                define_macros=macros,
                extra_compile_args=opt + omp_compile + module_flags.get(name, []),
                extra_link_args=omp_link,
            )
        )
    # Regenerate the C files when the build flavour (debug or not) changed since the last
    # build in this tree: Cython only compares timestamps, not directives.
    flavour = f"debug={DEBUG_BUILD}"
    stamp = EXT_DIR / ".build_flavour"
    force = not stamp.exists() or stamp.read_text() != flavour
    stamp.write_text(flavour)
    return cythonize(
        extensions,
        force=force,
        compiler_directives=COMPILER_DIRECTIVES,
        compile_time_env={"MINNET_DEBUG": DEBUG_BUILD},
        nthreads=int(os.environ.get("MINNET_BUILD_JOBS", os.cpu_count() or 1)),
        quiet=True,
    )


class build_ext_and_copy(build_ext):
    """build_ext that also copies the modules into the source tree (see the module docstring)."""

    def run(self):
        super().run()
        if self.inplace:
            return
        for ext in self.extensions:
            built = Path(self.get_ext_fullpath(ext.name))
            target = HERE / Path(*ext.name.split(".")[:-1]) / built.name
            if built.exists() and target.parent.is_dir() and os.access(target.parent, os.W_OK):
                try:
                    shutil.copyfile(built, target)
                except OSError:  # a read-only or busy checkout: the installed copy still works
                    pass


setup(
    cmdclass={"build_ext": build_ext_and_copy},
    ext_modules=_extensions(),
    # compile the extension modules in parallel (one per core)
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
