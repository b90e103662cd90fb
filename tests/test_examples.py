"""Smoke test: every script in examples/ runs with --quick in a fresh interpreter."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import minnet

# Slow (example scripts in subprocesses): CI runs this once, not again under the debug build (-m "not slow_once").
pytestmark = pytest.mark.slow_once

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_quick(script, tmp_path):
    # The examples import the installed minnet (as a user's script would), never the
    # source tree, whose extension modules are not built in place.
    # The child imports the same minnet as this test process: the installed package in CI,
    # the checkout when the suite runs from a source tree with in-place extensions.
    package_parent = str(pathlib.Path(minnet.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=path)
    result = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{script.name} printed nothing"
    if script.name == "digits_cnn.py":
        assert (tmp_path / "digits_cnn.minnet").exists()
        assert "identical predictions: True" in result.stdout


def test_every_example_has_a_quick_flag():
    assert len(EXAMPLES) >= 4
    for script in EXAMPLES:
        assert "--quick" in script.read_text(), script.name


SHORT = ["resnet_cifar_shaped.py", "two_input_model.py", "custom_train_step.py", "fit_from_generator.py"]


@pytest.mark.parametrize("name", SHORT)
def test_model_kind_examples_run_short(name, tmp_path):
    # The functional / subclassed / custom-step / generator examples, with their --short flag,
    # importing the same minnet as this test process.
    import minnet
    script = pathlib.Path(__file__).resolve().parent.parent / "examples" / name
    root = os.path.dirname(os.path.dirname(os.path.abspath(minnet.__file__)))
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    result = subprocess.run([sys.executable, str(script), "--short"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    if name == "fit_from_generator.py":
        assert "identical weights: True" in result.stdout


def test_adding_problem_shows_what_its_docstring_says(tmp_path):
    # The full run (1,200 steps per model, a few seconds): the claims its docstring makes.
    script = pathlib.Path(__file__).resolve().parent.parent / "examples" / "adding_problem.py"
    package_parent = str(pathlib.Path(minnet.__file__).resolve().parent.parent)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=package_parent)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    mse = dict(re.findall(r"^(\w+)\s*: test MSE ([0-9.]+)", result.stdout, re.M))
    ratio = re.findall(r"first/last: ([0-9.e+-]+)\)", result.stdout)
    assert set(mse) == {"SimpleRNN", "LSTM"} and len(ratio) == 2, result.stdout
    guess = float(re.search(r"predicting 1.0 scores MSE ([0-9.]+)", result.stdout).group(1))
    assert float(mse["LSTM"]) < 0.01 and float(mse["SimpleRNN"]) > 0.8 * guess, result.stdout
    assert float(ratio[1]) > 0.1 and float(ratio[0]) < 0.01, result.stdout     # LSTM, SimpleRNN
