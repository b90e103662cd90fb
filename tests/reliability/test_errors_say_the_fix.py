"""The mistakes a new user makes in the first hour get an error (or warning) that says the fix.

One test per case of the first-hour issue: a GPU device asked for, a PyTorch file given to
``load_model``, data of the wrong shape or layout for the model's ``Input``, a Dense layer on
images without ``Flatten``, a misspelt optimizer name, and a file written by a newer minnet.
"""
import json
import pickle
import re
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet._version import __version__


def _digits_model(input_shape, *body):
    model = mn.Sequential([layers.Input(input_shape), *body])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _conv_model(input_shape):
    return _digits_model(input_shape, layers.Conv2D(4, 3), layers.Flatten(), layers.Dense(10))


@pytest.mark.parametrize("call", [lambda m: m.to("cuda"), lambda m: m.to("cuda:0"),
                                  lambda m: m.cuda(), lambda m: m.layers[0].to("mps")])
def test_a_gpu_device_is_refused_with_the_way_to_a_gpu(call):
    model = _conv_model((8, 8, 1))
    with pytest.raises(ValueError, match=r"CPU only.*interop\.to_torch\(model\).*module\.to\('cuda'\)"):
        call(model)


def test_the_cpu_device_is_the_layer_itself():
    model = _conv_model((8, 8, 1))
    assert model.to("cpu") is model and model.to() is model and model.cpu() is model
    with pytest.raises(TypeError, match="dtype"):
        model.to("cpu", dtype="float64")


def _torch_zip(path):
    with zipfile.ZipFile(path, "w") as archive:      # the layout torch.save writes
        archive.writestr("model/data.pkl", pickle.dumps({"weight": [1.0]}))
        archive.writestr("model/version", "3\n")


@pytest.mark.parametrize("write", [_torch_zip, lambda p: p.write_bytes(pickle.dumps({"w": 1}))],
                         ids=["torch-zip", "pickle"])
def test_a_pytorch_file_names_torch_load_and_interop(tmp_path, write):
    path = tmp_path / "model.pt"
    write(path)
    with pytest.raises(mn.saving.ModelFileError) as raised:
        mn.load_model(path)
    message = str(raised.value)
    assert "torch.load" in message and "interop.load_torch_state_dict" in message
    assert "load_weights" not in message


def test_a_real_torch_save_file_is_named(tmp_path, torch):
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 3).state_dict(), path)
    with pytest.raises(mn.saving.ModelFileError, match="PyTorch file.*torch.load"):
        mn.load_model(path)


def test_a_first_layer_shape_mismatch_names_the_input_to_declare():
    model = _conv_model((32, 32, 1))
    x = np.zeros((4, 28, 28, 1), "float32")
    with pytest.raises(ValueError, match=re.escape("declare `Input(shape=(28, 28, 1))`")):
        model.fit(x, np.zeros(4, "int64"), verbose=0)
    with pytest.raises(ValueError, match=re.escape("samples of shape (32, 32, 1)")):
        model.predict(x, verbose=0)


@pytest.mark.parametrize("build", ["sequential", "functional"])
def test_channels_first_data_into_a_channels_last_model_says_transpose_or_data_format(build):
    if build == "sequential":
        model = _conv_model((28, 28, 3))
    else:
        inp = mn.Input((28, 28, 3))
        model = mn.Model(inp, layers.Dense(10)(layers.Flatten()(layers.Conv2D(4, 3)(inp))))
    x = np.zeros((2, 3, 28, 28), "float32")
    with pytest.raises(ValueError) as raised:
        model.predict(x, verbose=0)
    message = str(raised.value)
    assert "channels_first" in message and "x.transpose(0, 2, 3, 1)" in message
    assert "data_format" in message and "Input((3, 28, 28))" in message


def test_dense_on_images_without_flatten_says_add_flatten():
    model = _digits_model((8, 8, 1), layers.Dense(10))
    x = np.zeros((4, 8, 8, 1), "float32")
    with pytest.raises(ValueError, match=r"add `layers\.Flatten\(\)`"):
        model.fit(x, np.zeros(4, "int64"), verbose=0)


def test_a_misspelt_optimizer_suggests_the_closest_name_once():
    with pytest.raises(ValueError) as raised:
        mn.optimizers.get("adma")
    message = str(raised.value)
    assert "Did you mean 'Adam'?" in message
    known = message.split("Known names: ", 1)[1].rstrip(".").split(", ")
    assert len({name.lower() for name in known}) == len(known), known
    with pytest.raises(ValueError, match="Did you mean 'mse'"):
        mn.losses.get("mse2")


def test_a_file_from_a_newer_minnet_warns_naming_both_versions(tmp_path):
    model = _conv_model((8, 8, 1))
    path = tmp_path / "net.minnet"
    model.save(path)
    newer = tmp_path / "newer.minnet"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(newer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "config.json":
                config = json.loads(data)
                config["minnet_version"] = "99.1.0"
                data = json.dumps(config).encode()
            target.writestr(info, data)
    with pytest.warns(UserWarning, match=rf"minnet 99\.1\.0, newer than this minnet \({re.escape(__version__)}\)"):
        loaded = mn.load_model(newer)
    x = np.random.default_rng(0).random((2, 8, 8, 1), dtype="float32")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
