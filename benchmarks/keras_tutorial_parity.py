"""Run the Keras-tutorial scripts of tests/keras_scripts/ under Keras 3 and under minnet.

Each script is a plain Keras 3 script; minnet runs it with only its import lines changed
(``tests/keras_scripts/translate.py``). Both read the same data (minnet's digits upscaled to
28x28, and coloured to 32x32x3: ``tests/keras_scripts/make_data.py``) and print
``test_accuracy: X`` last. Keras is never a dependency of minnet: give the Python of an
environment that has it (``KERAS_BACKEND=torch``)::

    python benchmarks/keras_tutorial_parity.py --keras-python /tmp/kerasenv/bin/python
    python benchmarks/keras_tutorial_parity.py --only minnet        # minnet's side only

Prints one row per script: the two accuracies and their difference in points.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "keras_scripts"
sys.path.insert(0, str(SCRIPTS))
import make_data  # noqa: E402
import translate  # noqa: E402


def run(python, source, data_dir, extra_env):
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "script.py"
        script.write_text(source)
        env = dict(os.environ, TUTORIAL_DATA=str(data_dir), KERAS_BACKEND="torch", **extra_env)
        start = time.perf_counter()
        result = subprocess.run([python, str(script)], cwd=tmp, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if result.returncode != 0:
        return None, seconds, result.stderr.strip().splitlines()[-1:] or ["(no stderr)"]
    found = re.findall(r"^test_accuracy: ([0-9.eE+-]+)", result.stdout, re.M)
    return (float(found[-1]) if found else None), seconds, []


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keras-python", default=None, help="a Python with keras and torch installed")
    parser.add_argument("--minnet-python", default=sys.executable)
    parser.add_argument("--only", choices=["keras", "minnet"], default=None)
    parser.add_argument("--scripts", nargs="*", default=None, help="script names (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    data_dir = make_data.make(tempfile.mkdtemp())
    scripts = sorted(SCRIPTS.glob("t[0-9][0-9]_*.py"))
    if args.scripts:
        scripts = [s for s in scripts if s.stem in args.scripts or s.name in args.scripts]
    threads = {"OMP_NUM_THREADS": str(args.threads), "MINNET_NUM_THREADS": str(args.threads)}
    minnet_env = dict(threads, PYTHONPATH=str(ROOT))
    print(f"{'script':40s} {'keras':>8s} {'minnet':>8s} {'diff':>7s}   seconds (keras / minnet)")
    for script in scripts:
        source = script.read_text()
        k_acc = m_acc = None
        k_s = m_s = float("nan")
        notes = []
        if args.only != "minnet" and args.keras_python:
            k_acc, k_s, err = run(args.keras_python, source, data_dir, threads)
            notes += [f"keras: {e}" for e in err]
        if args.only != "keras":
            m_acc, m_s, err = run(args.minnet_python, translate.to_minnet(source), data_dir, minnet_env)
            notes += [f"minnet: {e}" for e in err]
        diff = (m_acc - k_acc) * 100 if (k_acc is not None and m_acc is not None) else None
        fmt = lambda v: f"{v:8.4f}" if v is not None else "     n/a"
        print(f"{script.stem:40s} {fmt(k_acc)} {fmt(m_acc)} "
              f"{(f'{diff:+7.2f}' if diff is not None else '    n/a')}   {k_s:6.1f} / {m_s:6.1f}"
              + ("   " + " | ".join(notes) if notes else ""), flush=True)


if __name__ == "__main__":
    main()
