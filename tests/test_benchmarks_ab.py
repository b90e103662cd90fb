"""benchmarks/ab.py: its row matching and table, on fake results files (no benchmark runs)."""
import importlib.util
import json
import pathlib

import pytest

AB_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "ab.py"
spec = importlib.util.spec_from_file_location("benchmarks_ab", AB_PATH)
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)


def _conv(ms):           # the shape bench_conv.py writes
    return {"benchmark": "conv", "rows": [{"threads": 1, "minnet_ms": ms, "per_sample_ms": ms + 1,
                                           "torch_ms": 5.0, "ratio_torch_over_minnet": 5.0 / ms}]}


def _training(train):    # the shape bench_training.py writes
    return {"threads": 1, "n": 100, "epochs": 2,
            "models": {"mlp": {"minnet_train": train, "torch_train": 9.0, "train_ratio": train / 9.0,
                               "minnet_buffers": {"activations_mib": 2.0}}}}


def _activations(ms):    # bench_activations.py: "results", not "rows"
    return {"platform": "x", "results": [{"op": "relu", "threads": 2, "minnet_ms": ms, "torch_ms": 1.0,
                                          "torch_over_minnet": 1.0 / ms}]}


def _write(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))


def test_rows_are_named_by_file_identity_and_metric_and_leave_torch_out():
    rows = ab.extract_rows("results/conv.json", _conv(2.0))
    assert rows == {"conv threads=1 minnet_ms": 2.0, "conv threads=1 per_sample_ms": 3.0}
    rows = ab.extract_rows("training_t1.json", _training(100.0))
    assert rows == {"training_t1 model=mlp minnet_train": 100.0,
                    "training_t1 model=mlp minnet_buffers.activations_mib": 2.0}
    assert ab.extract_rows("activations.json", _activations(0.5)) == {
        "activations op=relu threads=2 minnet_ms": 0.5}
    profile = {"mlp": {"wall_ms_per_step": 3.0, "detail_ms_per_step": {"relu_forward": 1.0}}}
    assert ab.extract_rows("profile_t2.json", profile) == {"profile_t2 model=mlp wall_ms_per_step": 3.0}


def test_direction_of_each_metric():
    assert ab.lower_is_better("minnet_ms") and ab.lower_is_better("wall_ms_per_step")
    assert ab.lower_is_better("minnet_buffers.activations_mib")
    assert not ab.lower_is_better("minnet_train") and not ab.lower_is_better("minnet_predict")


def test_table_matches_rows_and_flags_only_what_is_beyond_the_spread(tmp_path, capsys):
    # conv: old 2.0-2.2 ms, new 3.0-3.1 ms -> slower; training: old 100-110, new 90-120 -> within
    for i, (old_ms, new_ms, old_train, new_train) in enumerate(
            [(2.0, 3.0, 100.0, 90.0), (2.2, 3.1, 110.0, 120.0), (2.1, 3.05, 105.0, 100.0)], 1):
        _write(tmp_path / f"run{i}-old", "conv.json", _conv(old_ms))
        _write(tmp_path / f"run{i}-new", "conv.json", _conv(new_ms))
        _write(tmp_path / f"run{i}-old", "training_t1.json", _training(old_train))
        _write(tmp_path / f"run{i}-new", "training_t1.json", _training(new_train))
    _write(tmp_path / "run1-new", "activations.json", _activations(0.5))    # new only
    table = {r["row"]: r for r in ab.report(str(tmp_path))}
    printed = capsys.readouterr().out

    conv = table["conv threads=1 minnet_ms"]
    assert conv["old"] == pytest.approx(2.1) and conv["new"] == pytest.approx(3.05)
    assert (conv["old_min"], conv["old_max"], conv["new_min"], conv["new_max"]) == (2.0, 2.2, 3.0, 3.1)
    assert conv["ratio"] == pytest.approx(3.05 / 2.1) and conv["flag"] == "SLOWER"
    assert conv["runs"] == (3, 3)
    train = table["training_t1 model=mlp minnet_train"]
    assert train["old"] == 105.0 and train["new"] == 100.0 and train["flag"] == ""
    assert table["training_t1 model=mlp minnet_buffers.activations_mib"]["flag"] == ""
    assert "activations op=relu threads=2 minnet_ms" not in table
    assert "only in new (1): activations op=relu threads=2 minnet_ms" in printed
    line = next(l for l in printed.splitlines() if l.startswith("conv threads=1 minnet_ms"))
    assert "2.1 [2-2.2]" in line and "3.05 [3-3.1]" in line and "1.452" in line and "SLOWER" in line
    assert table["conv threads=1 per_sample_ms"]["flag"] == "SLOWER"
    assert "4 rows, 2 slower beyond the spread, 0 faster beyond it" in printed


def test_throughput_flags_follow_its_direction():
    old = {"t model=mlp minnet_train": [100.0, 101.0], "t model=mlp minnet_predict": [50.0, 51.0]}
    new = {"t model=mlp minnet_train": [90.0, 95.0], "t model=mlp minnet_predict": [60.0, 61.0]}
    flags = {r["row"]: r["flag"] for r in ab.compare(old, new)}
    assert flags == {"t model=mlp minnet_train": "SLOWER", "t model=mlp minnet_predict": "faster"}
    one_run = {k: v[:1] for k, v in new.items()}
    assert [r["flag"] for r in ab.compare(old, one_run)] == ["", ""]     # no spread, no flag


def test_compare_needs_both_sides(tmp_path):
    _write(tmp_path / "run1-old", "conv.json", _conv(2.0))
    with pytest.raises(SystemExit, match="no run"):
        ab.report(str(tmp_path))


def _fake_tree(root, minnet_ms):
    """A tree whose run_all.py writes one conv.json (no benchmark runs) and whose minnet is
    an empty package, so ab.py's own checks and copying run for real."""
    (root / "minnet").mkdir(parents=True)
    (root / "minnet" / "__init__.py").write_text("")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "run_all.py").write_text(
        "import json, os, sys\n"
        "import minnet\n"
        "assert os.path.dirname(minnet.__file__).startswith(os.getcwd()), minnet.__file__\n"
        "out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results')\n"
        "os.makedirs(out, exist_ok=True)\n"
        f"json.dump({json.dumps(_conv(minnet_ms))}, open(os.path.join(out, 'conv.json'), 'w'))\n"
        "open(os.path.join(out, 'args.txt'), 'w').write(' '.join(sys.argv[1:]))\n")
    return root


def test_main_runs_each_tree_on_its_own_path_and_interleaves(tmp_path, capsys):
    old, new = _fake_tree(tmp_path / "old", 2.0), _fake_tree(tmp_path / "new", 4.0)
    out = tmp_path / "out"
    ab.main([str(old), str(new), "--runs", "2", "--only", "conv", "--quick", "--out", str(out)])
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["run1-new", "run1-old", "run2-new", "run2-old"]
    assert json.loads((out / "run2-new" / "conv.json").read_text())["rows"][0]["minnet_ms"] == 4.0
    assert (old / "benchmarks" / "results" / "args.txt").read_text() == "--quick --only conv"
    order = [line.split(" -> ")[1].split(" ")[0] for line in printed.splitlines() if line.startswith("### ab: /")]
    assert [pathlib.Path(p).name for p in order] == ["run1-old", "run1-new", "run2-old", "run2-new"]
    assert "conv threads=1 minnet_ms" in printed and "SLOWER" in printed


BITS_PATH = AB_PATH.parent / "ab_bits.py"
bits_spec = importlib.util.spec_from_file_location("benchmarks_ab_bits", BITS_PATH)
ab_bits = importlib.util.module_from_spec(bits_spec)
bits_spec.loader.exec_module(ab_bits)


def test_ab_bits_ulps_counts_steps_across_zero():
    import numpy as np
    one = np.array([1.0], np.float32)
    assert ab_bits._ulps(one, np.nextafter(one, np.float32(2))) == 1
    assert ab_bits._ulps(np.array([0.0], np.float32), np.array([-0.0], np.float32)) == 0
    tiny = np.array([np.float32(1e-45)])
    assert ab_bits._ulps(tiny, -tiny) == 2                   # +1 ulp, 0, -1 ulp
    assert ab_bits._ulps(np.zeros(0), np.zeros(0)) == 0


def test_ab_bits_compare_reports_each_differing_array(tmp_path, capsys):
    import numpy as np
    a = {"t1.float32.x.0": np.ones(3, np.float32), "t1.float64.y.0": np.zeros(2)}
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "same.npz", **a)
    assert ab_bits.compare(tmp_path / "a.npz", tmp_path / "same.npz") == 0
    b = dict(a, **{"t1.float32.x.0": np.array([1, 1, np.nextafter(np.float32(1), np.float32(2))], np.float32)})
    np.savez(tmp_path / "b.npz", **b)
    assert ab_bits.compare(tmp_path / "a.npz", tmp_path / "b.npz") == 1
    out = capsys.readouterr().out
    assert "DIFFERS t1.float32.x.0: 1 of 3 elements, largest 1 ulp" in out
    assert "2 arrays compared, 1 differ" in out
