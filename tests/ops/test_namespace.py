"""The names of keras.ops (and its nn/numpy/linalg/image/core submodules) and keras.random,
diffed with minnet's: every Keras name minnet leaves out is in NOT_PROVIDED with its reason,
and docs/coming_from_keras.md lists each one. Signatures are compared too: minnet's public
ops take Keras's parameter names in Keras's order, with Keras's defaults."""
import inspect
import math
import pathlib

import numpy as np
import pytest

import minnet as mn
from minnet import ops
from minnet import random as mn_random

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside Keras/torch


DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"

NOT_PROVIDED = {
    "view_as_complex": "complex numbers: minnet tensors are real",
    "view_as_real": "complex numbers: minnet tensors are real",
    "polar": "complex numbers: minnet tensors are real",
}

NAMESPACES = [("ops", lambda k: k.ops, ops), ("ops.nn", lambda k: k.ops.nn, ops.nn),
              ("ops.numpy", lambda k: k.ops.numpy, ops.numpy), ("ops.linalg", lambda k: k.ops.linalg, ops.linalg),
              ("ops.image", lambda k: k.ops.image, ops.image), ("random", lambda k: k.random, mn_random)]


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


@pytest.mark.parametrize("label, theirs, mine", NAMESPACES, ids=[n[0] for n in NAMESPACES])
def test_every_keras_name_is_provided_or_listed(keras, label, theirs, mine):
    missing = _public(theirs(keras)) - _public(mine)
    unexplained = sorted(missing - set(NOT_PROVIDED))
    assert not unexplained, f"keras.{label} names minnet neither provides nor lists in NOT_PROVIDED: {unexplained}"


def test_core_names(keras):
    import keras.src.ops.core as keras_core
    core = {n for n in _public(keras.ops) if getattr(keras.ops, n) is getattr(keras_core, n, None)}
    assert core - _public(ops.core) == set()


def test_not_provided_is_not_stale(keras):
    every = set().union(*(_public(theirs(keras)) for _, theirs, _ in NAMESPACES))
    provided = set().union(*(_public(mine) for _, _, mine in NAMESPACES))
    assert set(NOT_PROVIDED) <= every, sorted(set(NOT_PROVIDED) - every)
    assert not set(NOT_PROVIDED) & provided, sorted(set(NOT_PROVIDED) & provided)


def test_docs_list_what_is_not_provided():
    text = (DOCS / "coming_from_keras.md").read_text()
    section = text[text.index("## keras.ops and keras.random"):]
    absent = [name for name in NOT_PROVIDED if f"`{name}`" not in section]
    assert not absent, f"docs/coming_from_keras.md does not list: {absent}"


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def _same_default(a, b):
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    try:
        return bool(np.all(a == b)) and type(a) is type(b) or a == b
    except Exception:     # noqa: BLE001 - defaults of any type
        return False


# (name, why the signature differs on purpose)
SIGNATURE_DIFFERENCES = {
}


@pytest.mark.parametrize("label, theirs, mine", NAMESPACES, ids=[n[0] for n in NAMESPACES])
def test_signatures_match_keras(keras, label, theirs, mine):
    problems = []
    module = theirs(keras)
    for name in sorted(_public(module) & _public(mine)):
        k_fn, m_fn = getattr(module, name), getattr(mine, name)
        if inspect.ismodule(k_fn) or inspect.isclass(k_fn) or name in SIGNATURE_DIFFERENCES:
            continue
        kp, mp = _params(k_fn), _params(m_fn)
        if kp is None or mp is None:
            continue
        if list(kp) != list(mp):
            problems.append(f"{name}: keras {list(kp)} vs minnet {list(mp)}")
            continue
        for pname in kp:
            if not _same_default(kp[pname].default, mp[pname].default):
                problems.append(f"{name}({pname}=): keras {kp[pname].default!r} vs minnet {mp[pname].default!r}")
    assert not problems, "\n".join(problems)


def test_counts_are_as_documented(keras):
    # docs/ops.md states how many Keras names each namespace covers; keep it true
    text = (DOCS / "ops.md").read_text()
    for label, theirs, mine in NAMESPACES:
        names = _public(theirs(keras))
        covered = len(names & _public(mine))
        assert f"| `keras.{label}` | {len(names)} | {covered} |" in text, (label, len(names), covered)


def test_ops_reachable_from_minnet():
    assert mn.ops is ops and mn.random is mn_random
