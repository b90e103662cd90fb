"""Every name Keras 3 exports in the namespaces minnet mirrors is in minnet, or listed here
with its reason (issue 28). docs/coming_from_keras.md shows the same list; a test keeps the
two in step, and one fails when a listed name has since been provided (a stale entry)."""
import importlib
import pathlib
import re

import pytest

NAMESPACES = ["layers", "losses", "metrics", "optimizers", "optimizers.schedules", "callbacks",
              "activations", "initializers", "regularizers", "constraints", "config", "datasets"]

_BACKEND = "backend-specific (wraps a JAX, Flax, PyTorch or TensorFlow object)"
_HASH = ("needs TensorFlow's FarmHash Fingerprint64 for Keras's bins (Keras itself needs "
         "TensorFlow for it)")

NOT_PROVIDED = {
    "layers": {
        "FlaxLayer": _BACKEND, "JaxLayer": _BACKEND, "TorchModuleWrapper": _BACKEND,
        "TFSMLayer": _BACKEND,
        "Hashing": _HASH, "HashedCrossing": _HASH,
    },
    "optimizers": {
        "legacy": "Keras 2's optimizers (Keras 3 raises on them too)",
    },
    "callbacks": {
        "OrbaxCheckpoint": "JAX/Orbax-specific checkpoints",
    },
}

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "coming_from_keras.md"


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


@pytest.mark.slow_once
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_keras_name_is_provided_or_listed(keras, namespace):
    import minnet
    theirs = _public(importlib.import_module(f"keras.{namespace}"))
    ours = _public(importlib.import_module(f"minnet.{namespace}"))
    listed = set(NOT_PROVIDED.get(namespace, {}))
    missing = sorted(theirs - ours - listed)
    assert not missing, f"keras.{namespace} names neither in minnet nor listed: {missing}"
    stale = sorted(set(NOT_PROVIDED.get(namespace, {})) & ours)
    assert not stale, f"listed as not provided but minnet has them now: {stale}"
    unknown = sorted(listed - theirs)
    assert not unknown, f"listed but not Keras names: {unknown}"
    assert minnet is not None


def test_the_docs_show_the_list():
    text = DOC.read_text()
    heading = "## Keras names minnet does not provide"
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    section = text[start:end if end != -1 else len(text)]
    for namespace, names in NOT_PROVIDED.items():
        for name in names:
            assert re.search(rf"`{re.escape(name)}`", section), (namespace, name)
