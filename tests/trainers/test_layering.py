"""The trainer split keeps imports going down: models -> saving -> trainers -> callbacks -> ..."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2] / "minnet"

# package -> minnet modules it must never import (they sit above it).
ABOVE = {
    "callbacks": {"trainers", "saving", "models", "interop"},
    "trainers": {"saving", "models", "interop"},
    "models": {"interop"},
    "utils": {"layers", "losses", "metrics", "optimizers", "callbacks", "trainers", "saving", "models",
              "interop", "functional", "autograd"},
}


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("minnet"):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            yield node, names
        elif isinstance(node, ast.Import) and any(a.name.startswith("minnet") for a in node.names):
            yield node, [a.name for a in node.names if a.name.startswith("minnet")]


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_imports_go_down_and_sit_at_module_top(package):
    for path in sorted((ROOT / package).glob("*.py")):
        tree = ast.parse(path.read_text())
        top_level = {id(node) for node in tree.body}
        for node, names in _imports(tree):
            assert id(node) in top_level, f"{path.name}:{node.lineno} imports inside a function"
            for name in names:
                parts = name.split(".")
                floor = parts[1] if len(parts) > 1 else None
                assert floor not in ABOVE[package], f"{path.name}:{node.lineno} imports {name} (above {package})"
