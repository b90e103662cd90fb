"""The floors rule, kept by a test: imports go down only, at module top, no private names across modules.

Floors, from the bottom (docs/internals.md draws them)::

    _ext  <-  autograd  <-  functional  <-  ops  <-  initializers, activations, regularizers, constraints
          <-  layers  <-  losses, metrics, optimizers  <-  callbacks  <-  trainers
          <-  saving  <-  models  <-  interop, distributed

Beside them, importing nothing above themselves: ``config``, ``utils``, ``datasets``,
``data``, the registry (``_registry``), the shared checks (``_checks``), ``_config``,
``_random``, ``_utils``, ``_version``. A module may import its own floor and any floor below it.

What the test parses (with ``ast``, so nothing is imported):

* every ``import`` / ``from ... import`` of a ``minnet`` module, at any depth of the file;
* an import inside a function or method fails unless it names an optional third-party
  package (``OPTIONAL``), is the one named lazy import of a required package's heavy
  submodule (``LAZY``: scipy.signal, in ``minnet/_utils.py``), or sits in
  ``minnet/__init__.py`` (the lazy submodule loading);
* ``from minnet.x import _name`` fails when ``_name`` is not itself a module: private
  helpers are not shared across modules (promote them to a named internal module).
"""
import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "minnet"

# floor number of each top-level part of the package (bigger = higher).
FLOORS = {
    "_ext": 0,
    "autograd": 1,
    "functional": 2,
    "ops": 2.5,     # keras.ops / keras.random and the symbolic tensor (DESIGN.md: above functional)
    "initializers": 3, "activations": 3, "regularizers": 3, "constraints": 3,
    "layers": 4,
    "losses": 5, "metrics": 5, "optimizers": 5,
    "callbacks": 6,
    "trainers": 7,
    "saving": 8,
    "models": 9,
    "distribution": 9.5,   # DESIGN.md: just below interop, above models
    "interop": 10,
    "random": 2.5,  # minnet.random (keras.random) sits on the ops floor
}
# Beside the floors: they may import one another and _ext, nothing on a floor above _ext.
SIDE = {"config", "utils", "datasets", "data", "_registry", "_checks", "_config", "_random",
        "_utils", "_version", "_naming", "__init__"}
OPTIONAL = {"torch", "matplotlib", "mpi4py", "PIL", "h5py", "hypothesis", "IPython", "onnx"}
# Submodules of required packages imported on first use, each with its reason at the import:
# scipy.signal costs about 40 MiB of RSS in every process (minnet._utils.get_window).
LAZY = {"scipy.signal": "minnet/_utils.py"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        yield path


def _part(dotted):
    """Top-level part ('layers', '_ext', ...) of a dotted minnet module name."""
    parts = dotted.split(".")
    assert parts[0] == "minnet"
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(dotted):
    rel = pathlib.Path(*dotted.split(".")[1:])
    base = PACKAGE / rel
    return (base.with_suffix(".py").exists() or (base / "__init__.py").exists()
            or any(base.parent.glob(base.name + ".*.so")) or base.with_suffix(".pyx").exists())


def _resolve(node, module, is_package):
    """Absolute dotted name imported by an ImportFrom node (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[:-(node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path, source):
    """Yield (lineno, imported dotted module, imported names, inside_function)."""
    tree = ast.parse(source, filename=str(path))
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    parents = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent

    def in_function(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return True
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, [], in_function(node)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, is_package)
            yield node.lineno, target, [a.name for a in node.names], in_function(node)


def _violations(sources=None):
    """Every broken rule, as readable lines; ``sources`` maps paths to text (default: the package)."""
    if sources is None:
        sources = {path: path.read_text() for path in _modules()}
    found = []
    for path, source in sources.items():
        module = _module_name(path)
        here = _part(module)
        rel = path.relative_to(PACKAGE.parent)
        for lineno, target, names, inside in _imports(path, source):
            top = target.split(".")[0]
            where = f"{rel}:{lineno}"
            lazy = LAZY.get(target) == str(rel)
            if inside and top not in OPTIONAL and not lazy and path != PACKAGE / "__init__.py":
                found.append(f"{where}: function-level import of {target!r}")
            if top != "minnet":
                continue
            # `from minnet import layers` names a submodule: judge the submodule.
            targets = [target]
            if target == "minnet":  # `from minnet import x`: x is a submodule or the package's own name
                targets = [f"minnet.{n}" for n in names if _is_module(f"minnet.{n}")]
            elif names and all(_is_module(f"{target}.{n}") for n in names):
                targets = [f"{target}.{n}" for n in names]
            for dotted in targets:
                there = _part(dotted)
                if here == "__init__" or there == "__init__":
                    continue
                if here in SIDE:
                    if there not in SIDE and there != "_ext":
                        found.append(f"{where}: {module} (beside the floors) imports {dotted} "
                                     f"(floor '{there}')")
                    continue
                if there in SIDE:
                    continue
                if here not in FLOORS or there not in FLOORS:
                    found.append(f"{where}: {module} or {dotted} is on no floor: add it to FLOORS "
                                 f"or SIDE in tests/test_architecture.py and docs/internals.md")
                    continue
                if FLOORS[there] > FLOORS[here]:
                    found.append(f"{where}: upward import: {module} (floor '{here}') imports "
                                 f"{dotted} (floor '{there}')")
            for name in names:
                if (name.startswith("_") and not name.startswith("__")
                        and not _is_module(f"{target}.{name}") and target != module):
                    found.append(f"{where}: private name {name!r} imported from {target}")
    return found


def test_imports_follow_the_floors():
    violations = _violations()
    assert not violations, "import rule broken:\n" + "\n".join(violations)


def test_every_part_is_placed():
    parts = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in _modules()}
    unplaced = sorted(parts - set(FLOORS) - SIDE)
    assert not unplaced, f"parts of minnet on no floor (add them to FLOORS or SIDE): {unplaced}"


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    import minnet.layers\n", "function-level import"),
    ("from minnet.layers.base import _unique_name\n", "private name"),
    ("from minnet import models\n", "upward import"),
    ("import minnet.trainers\n", "upward import"),
])
def test_the_checker_catches(source, expected):
    # The rule can fail: a planted module on the functional floor breaking it is reported.
    planted = PACKAGE / "functional" / "_planted_for_test.py"
    assert any(expected in v for v in _violations({planted: source}))


def test_the_checker_allows_optional_and_downward_imports():
    planted = PACKAGE / "layers" / "_planted_for_test.py"
    source = ("import numpy as np\nfrom minnet import functional as F\nfrom minnet._ext import conv_kernels\n"
              "from minnet import _checks\n\ndef f():\n    import torch\n")
    assert _violations({planted: source}) == []


# ---------------------------------------------------------------- no source file over 900 lines

MAX_LINES = 900
SOURCE_SUFFIXES = (".py", ".pyx", ".pxd", ".h")      # not .pyi stubs
# Files still over the limit, each to be split (issue 26); the list may only shrink: a file
# listed here that is back under the limit fails the test until its line is removed.
STILL_OVER = set()


def _line_counts(root=PACKAGE):
    counts = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
            with open(path, encoding="utf-8") as f:
                counts[path.relative_to(root).as_posix()] = sum(1 for _ in f)
    return counts


def _too_long(counts):
    over = {name for name, n in counts.items() if n > MAX_LINES}
    return sorted(over - STILL_OVER), sorted(STILL_OVER - over)


def test_no_source_file_is_over_900_lines():
    counts = _line_counts()
    new_over, back_under = _too_long(counts)
    assert not new_over, (f"over {MAX_LINES} lines (split them): "
                          + ", ".join(f"{n} ({counts[n]})" for n in new_over))
    assert not back_under, f"under {MAX_LINES} lines now, remove from STILL_OVER: {back_under}"


def test_the_line_limit_can_fail(tmp_path):
    (tmp_path / "big.pyx").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "small.h").write_text("int x;\n")
    (tmp_path / "stub.pyi").write_text("x: int\n" * (MAX_LINES + 1))
    counts = _line_counts(tmp_path)
    assert counts == {"big.pyx": MAX_LINES + 1, "small.h": 1}
    assert _too_long(counts)[0] == ["big.pyx"]


# ------------------------------------------------- every float-only fast path names its benchmark
#
# A kernel written once for `floating` may branch on the type (issue 26, item 2). A branch that
# only picks the type's name for the same thing -- a ternary (`np.float32 if floating is float
# else np.float64`), or an if/else whose two sides are one call each to the same function but
# for its type suffix (sgemm/dgemm, minnet_adam_block_f/_d) -- is a type dispatch. Any other
# `if floating is float` (or `is double`) is a second algorithm that only a measurement keeps:
# the `if` line or one of the two lines above it names the benchmark, as
# `benchmarks/<script>.py "<row>"`, a script that exists and contains that row's name.

EXT = PACKAGE / "_ext"
BENCHMARKS = PACKAGE.parent / "benchmarks"
TYPE_BRANCH = re.compile(r"^\s*(?:el)?if\b.*\bfloating is (?:not )?(?:float|double)\b")
BENCH_NAME = re.compile(r'benchmarks/(\w+\.py) "([^"]+)"')
CALLEE = re.compile(r"^(?:return\s+|[\w\[\]. ]+=\s*)?(\w+)\(")


def _indent(line):
    return len(line) - len(line.lstrip())


def _block(lines, i, indent):
    """Lines i.. indented deeper than ``indent`` (the body of a statement at i - 1)."""
    body = []
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        if lines[i].strip():
            body.append(lines[i].strip())
        i += 1
    return body, i


def _one_call(body):
    """The callee when ``body`` is one statement calling one function, else None."""
    text = " ".join(line.split("#")[0].strip() for line in body).strip()
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == ")" and text[k + 1:].strip():
            return None
    m = CALLEE.match(text)
    if m is None:
        return None
    name = re.sub(r"_(f|d|f32|f64)$", "_T", m.group(1))
    return re.sub(r"^[sd](gemm|gemv|axpy|dot|scal)$", r"T\1", name)


def _is_dispatch(lines, i):
    indent = _indent(lines[i])
    first, j = _block(lines, i + 1, indent)
    if j < len(lines) and lines[j].strip() == "else:" and _indent(lines[j]) == indent:
        second, _ = _block(lines, j + 1, indent)
    elif first and first[0].startswith("return ") and j < len(lines):
        second, _ = _block(lines, j + 1, indent)       # if ...: return f(); return d()
        second = [lines[j].strip()] + second
    else:
        return False
    a, b = _one_call(first), _one_call(second)
    return a is not None and a == b


def _unnamed_fast_paths(files):
    """``file:line`` of each type branch that is no dispatch and names no (existing) benchmark."""
    found = []
    for path, text in files.items():
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if not TYPE_BRANCH.match(line) or _is_dispatch(lines, i):
                continue
            named = [m for near in lines[max(0, i - 2):i + 1] for m in BENCH_NAME.finditer(near)]
            if not any((BENCHMARKS / script).is_file() and row in (BENCHMARKS / script).read_text()
                       for script, row in (m.groups() for m in named)):
                found.append(f"{path.name}:{i + 1}: {line.strip()}")
    return found


def test_every_float_fast_path_names_its_benchmark():
    files = {path: path.read_text(encoding="utf-8") for path in sorted(EXT.glob("*.pyx"))}
    found = _unnamed_fast_paths(files)
    assert not found, ("a float-only branch with no benchmark named beside it "
                       '(# fast path: benchmarks/<script>.py "<row>"):\n' + "\n".join(found))


NUMPY_API_HELPERS = re.compile(r"\b(data_ptr|is_f32|size_of)\b")


def test_modules_using_the_numpy_api_import_it():
    # _base.pxd's inline data_ptr/is_f32/size_of call the NumPy C API inside the module that
    # cimports them; without its own cnp.import_array() that module reads a NULL table (a
    # segfault on the first call, not an ImportError).
    missing = [path.name for path in sorted(EXT.glob("*.pyx"))
               if NUMPY_API_HELPERS.search(text := path.read_text(encoding="utf-8"))
               and "cnp.import_array()" not in text]
    assert not missing, f"cimport _base's NumPy helpers without cnp.import_array(): {missing}"


PLANTED_DISPATCH = '''
cdef void f(floating* x, int n):
    dtype = np.float32 if floating is float else np.float64
    if floating is float:
        minnet_add_f(x,
                     n)
    else:
        minnet_add_d(x, n)
    if floating is float:
        return minnet_sum_f(x, n)
    return minnet_sum_d(x, n)
'''


@pytest.mark.parametrize("branch, ok", [
    ("    if floating is float:\n        fast_f(x, n)\n        return\n", False),
    ("    if floating is float and n > 4:\n        fast_f(x, n)\n    else:\n        slow(x, n)\n", False),
    ("    if (floating is float\n            and n > 4):\n        fast_f(x, n)\n", False),
    ("    if floating is double:\n        minnet_a_d(x, n)\n    else:\n        minnet_b_f(x, n)\n", False),
    ('    # benchmarks/no_such_script.py "sigmoid"\n    if floating is float:\n        fast_f(x, n)\n',
     False),
    ('    # benchmarks/bench_activations.py "no such row"\n    if floating is float:\n        f(x)\n',
     False),
    ('    # fast path: benchmarks/bench_activations.py "sigmoid"\n    if floating is float:\n'
     '        fast_f(x, n)\n', True),
    ('    if floating is float:  # benchmarks/bench_activations.py "tanh"\n        fast_f(x)\n', True),
])
def test_the_fast_path_rule_can_fail(branch, ok):
    source = PLANTED_DISPATCH + "\n\ncdef void g(floating* x, int n):\n" + branch
    found = _unnamed_fast_paths({EXT / "planted_for_test.pyx": source})
    assert len(found) == (0 if ok else 1), found   # the dispatch forms above pass
