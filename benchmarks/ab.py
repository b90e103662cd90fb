"""A/B: run two trees' benchmarks interleaved and compare minnet's figures row by row.

    python benchmarks/ab.py OLD_TREE NEW_TREE                 # run_all.py, 3 runs of each
    python benchmarks/ab.py OLD NEW --runs 5 --only conv autograd --quick
    python benchmarks/ab.py --compare DIR                     # the table again, from DIR

Each tree runs its own ``benchmarks/run_all.py`` with that tree first on ``PYTHONPATH``
(so its own built ``minnet/_ext/*.so``; build each tree first), in the order
old, new, old, new, ...  After each run the JSON files it wrote in
``TREE/benchmarks/results/`` are copied to ``DIR/run<i>-old/`` or ``DIR/run<i>-new/``
(default ``DIR``: ``benchmarks/results/ab-<time>/`` of the tree this script is in).

Rows are matched by name: the results file, the row's identity (op, layout, workload,
pass, threads, model) and the metric.  Only minnet's own figures are compared (a
metric whose name holds ``torch``, ``ratio`` or ``over`` is PyTorch's or derived, and
the profile's per-function detail is left out).  Times and memory (``*_ms``,
``*_mib``, ``*_per_step``) are better lower; everything else (samples/s) higher.
A row is flagged ``SLOWER`` when every new run is worse than every old run (the
ranges do not overlap), ``faster`` in the opposite case; with one run of a side no row
is flagged (there is no spread to exceed).  The load average before
each run is printed: compare only runs made under the same load.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
IDENTITY = ("op", "shape", "layout", "workload", "pass", "name", "threads")
SKIP_WORDS = ("torch", "ratio", "over", "detail")
LOWER_IS_BETTER = ("_ms", "_mib", "_per_step", "_seconds")


def lower_is_better(metric):
    last = metric.split(".")[-1]
    return any(last.endswith(s) or f"{s}_" in last for s in LOWER_IS_BETTER)


def _numeric_leaves(value, prefix=""):
    """(dotted path, number) for each int/float leaf of nested dicts (bools excluded)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if any(w in str(key) for w in SKIP_WORDS):
                continue
            yield from _numeric_leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield prefix, float(value)


def extract_rows(filename, data):
    """``{row name: value}`` of minnet's figures in one results file.

    Three shapes are written by the benchmarks: a list of rows (``"rows"`` or
    ``"results"``: each a dict whose identity fields name it), ``"models"`` (a dict per
    model: bench_training.py), or one dict per model at the top (the profile).
    """
    stem = os.path.splitext(os.path.basename(filename))[0]
    out = {}
    rows = data.get("rows", data.get("results")) if isinstance(data, dict) else None
    if isinstance(rows, list):
        for row in rows:
            if not isinstance(row, dict):
                continue
            ident = " ".join(f"{k}={row[k]}" for k in IDENTITY if k in row)
            metrics = {k: v for k, v in row.items() if k not in IDENTITY}
            for metric, value in _numeric_leaves(metrics):
                out[f"{stem} {ident} {metric}".replace("  ", " ")] = value
        return out
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):        # the profile: {model: {...}}
        models = {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
    for model, summary in models.items():
        for metric, value in _numeric_leaves(summary):
            out[f"{stem} model={model} {metric}"] = value
    return out


def collect(run_dirs):
    """``{row name: [value per run]}`` over the results folders of one tree's runs."""
    values = {}
    for folder in run_dirs:
        for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
            with open(path) as f:
                try:
                    data = json.load(f)
                except json.JSONDecodeError:
                    print(f"ab: {path} is not JSON; skipped", file=sys.stderr)
                    continue
            for name, value in extract_rows(path, data).items():
                values.setdefault(name, []).append(value)
    return values


def compare(old, new):
    """One dict per row present on both sides, in the old side's order."""
    table = []
    for name, old_values in old.items():
        new_values = new.get(name)
        if not new_values:
            continue
        o, n = statistics.median(old_values), statistics.median(new_values)
        lower = lower_is_better(name.rsplit(" ", 1)[-1])
        if min(len(old_values), len(new_values)) < 2:     # one run has no spread to exceed
            flag = ""
        elif lower:
            flag = "SLOWER" if min(new_values) > max(old_values) else (
                "faster" if max(new_values) < min(old_values) else "")
        else:
            flag = "SLOWER" if max(new_values) < min(old_values) else (
                "faster" if min(new_values) > max(old_values) else "")
        table.append({"row": name, "old": o, "old_min": min(old_values), "old_max": max(old_values),
                      "new": n, "new_min": min(new_values), "new_max": max(new_values),
                      "ratio": n / o if o else float("nan"), "lower_is_better": lower, "flag": flag,
                      "runs": (len(old_values), len(new_values))})
    return table


def _cell(median, low, high):
    return f"{median:.4g} [{low:.4g}-{high:.4g}]"


def format_table(table, only_old=(), only_new=()):
    lines = []
    width = max([len(r["row"]) for r in table] + [3])
    lines.append(f"{'row':{width}s}  {'old median [min-max]':>28s}  {'new median [min-max]':>28s}  "
                 f"{'new/old':>7s}  flag")
    for r in table:
        better = "lower" if r["lower_is_better"] else "higher"
        lines.append(f"{r['row']:{width}s}  {_cell(r['old'], r['old_min'], r['old_max']):>28s}  "
                     f"{_cell(r['new'], r['new_min'], r['new_max']):>28s}  {r['ratio']:7.3f}  "
                     f"{r['flag'] or '':6s} ({better} is better)")
    slower = sum(r["flag"] == "SLOWER" for r in table)
    lines.append(f"{len(table)} rows, {slower} slower beyond the spread, "
                 f"{sum(r['flag'] == 'faster' for r in table)} faster beyond it")
    for label, names in (("only in old", only_old), ("only in new", only_new)):
        if names:
            lines.append(f"{label} ({len(names)}): " + ", ".join(sorted(names)[:20])
                         + (" ..." if len(names) > 20 else ""))
    return "\n".join(lines)


def report(out_dir):
    runs = sorted(glob.glob(os.path.join(out_dir, "run*-old"))), sorted(glob.glob(os.path.join(out_dir, "run*-new")))
    if not runs[0] or not runs[1]:
        sys.exit(f"ab: no run*-old / run*-new folders in {out_dir}")
    old, new = collect(runs[0]), collect(runs[1])
    table = compare(old, new)
    print(format_table(table, set(old) - set(new), set(new) - set(old)))
    return table


def _env_for(tree):
    env = dict(os.environ)
    env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _check_tree(tree):
    script = os.path.join(tree, "benchmarks", "run_all.py")
    if not os.path.isfile(script):
        sys.exit(f"ab: {tree} has no benchmarks/run_all.py")
    where = subprocess.run([sys.executable, "-c", "import minnet, os; print(os.path.realpath(minnet.__file__))"],
                           cwd=tree, env=_env_for(tree), capture_output=True, text=True)
    if where.returncode != 0:
        sys.exit(f"ab: `import minnet` fails in {tree} (is it built?):\n{where.stderr[-2000:]}")
    if not where.stdout.strip().startswith(os.path.realpath(tree) + os.sep):
        sys.exit(f"ab: in {tree}, `import minnet` found {where.stdout.strip()}, not the tree's own")


def run_once(tree, passthrough, dest):
    """Run ``tree``'s run_all.py once; copy the JSON it wrote to ``dest``."""
    results = os.path.join(tree, "benchmarks", "results")
    started = time.time()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n### ab: {tree} -> {dest} (load {load:.2f})", flush=True)
    status = subprocess.call([sys.executable, os.path.join(tree, "benchmarks", "run_all.py")] + passthrough,
                             cwd=tree, env=_env_for(tree))
    os.makedirs(dest, exist_ok=True)
    for path in glob.glob(os.path.join(results, "*.json")):
        if os.path.getmtime(path) >= started - 1:
            shutil.copy2(path, dest)
    with open(os.path.join(dest, "ab_run.txt"), "w") as f:
        f.write(f"tree {tree}\nstatus {status}\nload_before {load:.2f}\nseconds {time.time() - started:.1f}\n")
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", nargs="?", help="the tree before the change")
    parser.add_argument("new", nargs="?", help="the tree after the change")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tree (default 3)")
    parser.add_argument("--only", nargs="+", default=None, help="passed to run_all.py")
    parser.add_argument("--quick", action="store_true", help="passed to run_all.py")
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="passed to run_all.py")
    parser.add_argument("--out", default=None, help="folder for the copied results")
    parser.add_argument("--compare", metavar="DIR", default=None,
                        help="print the table from an earlier --out folder; run nothing")
    args = parser.parse_args(argv)
    if args.compare:
        report(args.compare)
        return
    if not args.old or not args.new:
        parser.error("OLD_TREE and NEW_TREE are required (or --compare DIR)")
    if args.runs < 1:
        parser.error(f"Invalid value for argument `--runs`: expected an int >= 1. Received: {args.runs}")
    old, new = os.path.abspath(args.old), os.path.abspath(args.new)
    for tree in (old, new):
        _check_tree(tree)
    out = os.path.abspath(args.out or os.path.join(HERE, "results", time.strftime("ab-%Y%m%d-%H%M%S")))
    passthrough = (["--quick"] if args.quick else []) + (["--only"] + args.only if args.only else []) \
        + (["--threads"] + [str(t) for t in args.threads] if args.threads else [])
    failed = []
    for i in range(args.runs):
        for side, tree in (("old", old), ("new", new)):
            if run_once(tree, passthrough, os.path.join(out, f"run{i + 1}-{side}")) != 0:
                failed.append(f"run {i + 1} {side}")
    print(f"\n### ab: old = {old}\n### ab: new = {new}\n### ab: results in {out}\n")
    report(out)
    if failed:
        print(f"ab: run_all.py failed in: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
