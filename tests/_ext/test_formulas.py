"""One source per formula: each activation's scalar math is ONE C function (in a .h file),
which every kernel that needs it calls.  The test reads minnet/_ext as text."""
import re
from pathlib import Path

import pytest

import minnet as mn

EXT = Path(mn.__file__).parent / "_ext"
TEXTS = {p.name: p.read_text() for p in sorted(EXT.rglob("*")) if p.suffix in (".pyx", ".pxd", ".h")}


def _definitions(name, texts=TEXTS):
    pattern = re.compile(rf"^\s*static\s+(inline\s+)?(float|double)\s+{name}\s*\(", re.M)
    return [f for f, text in texts.items() for _ in pattern.finditer(text)]


@pytest.mark.parametrize("name, home", [
    ("minnet_sigmoid1_f", "_fastmath.h"), ("minnet_sigmoid1_d", "_fastmath.h"),
    ("minnet_tanh_f", "_fastmath.h"), ("minnet_exp_nonpos_f", "_fastmath.h"),
    ("minnet_expm1_nonpos_f", "_fastmath.h"), ("minnet_softplus1_f", None),
    ("minnet_phi_cdf_f", None),
])
def test_each_activation_is_defined_once(name, home):
    homes = _definitions(name)
    assert len(homes) == 1, f"{name} is defined {len(homes)} times: {homes}"
    if home is not None:
        assert homes == [home]


# The sigmoid written out again, in C or in Cython (the shapes its copies had).
SIGMOID_COPIES = [
    r"\?\s*1(\.0f?)?\s*:\s*e\s*\)\s*/\s*\(\s*1(\.0f?)?\s*\+\s*e\s*\)",      # (v >= 0 ? 1 : e) / (1 + e)
    r"\(\s*(1|one) if \w+ >= 0 else e\s*\)\s*/\s*\(\s*(1|one) \+ e\s*\)",    # Cython
    r"(one|1\.0f?) / \((one|1\.0f?) \+ (expf?\(-|e\))",                      # 1 / (1 + exp(-x))
]


def test_the_sigmoid_formula_is_written_only_in_its_home():
    found = sorted({f for f, text in TEXTS.items() for p in SIGMOID_COPIES if re.search(p, text)})
    assert found == ["_fastmath.h"], f"the sigmoid formula is written out in {found}"


def test_the_greps_can_fail():
    planted = {"a.h": "static inline float minnet_sigmoid1_f(float v) {", "b.pyx":
               "    static float minnet_sigmoid1_f(float v) {\n    y = (1 if v >= 0 else e) / (1 + e)"}
    assert _definitions("minnet_sigmoid1_f", planted) == ["a.h", "b.pyx"]
    assert re.search(SIGMOID_COPIES[1], planted["b.pyx"])
