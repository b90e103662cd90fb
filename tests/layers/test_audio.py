"""STFTSpectrogram, MelSpectrogram and the STFT initializer (issue 28): a direct DFT and
scipy.signal.stft as references, float64 gradcheck, Keras 3 as the oracle."""
import numpy as np
import pytest
import scipy.signal

import minnet as mn
from minnet import initializers, layers

RNG = np.random.default_rng(2028)

MODES = ["log", "magnitude", "psd", "real", "imag", "angle", "stft"]
CASES = [dict(),
         dict(frame_length=100, frame_step=30, fft_length=128, window="hamming", periodic=True,
              scaling="spectrum"),
         dict(frame_length=64, padding="same", window=None, scaling=None),
         dict(frame_length=33, frame_step=33, fft_length=64, expand_dims=True)]


def _to_format(x, data_format):
    return x if data_format == "channels_last" else np.ascontiguousarray(x.transpose(0, 2, 1))


def _wrapped(angle):
    return np.angle(np.exp(1j * angle))


def _dft_reference(x, frame_length, frame_step, fft_length, window, scaling):
    """(batch, channels, bins, frames) real and imaginary parts, by np.fft.rfft of each frame."""
    n_frames = (x.shape[1] - frame_length) // frame_step + 1
    frames = np.stack([x[:, i * frame_step:i * frame_step + frame_length] for i in range(n_frames)],
                      axis=1)                                  # (batch, frames, L, channels)
    w = np.ones(frame_length) if window is None else window
    scale = np.sqrt(np.sum(w ** 2)) if scaling == "density" else np.sum(np.abs(w)) \
        if scaling == "spectrum" else 1.0
    spectrum = np.fft.rfft(frames * w[:, None] / scale, n=fft_length, axis=2)
    return spectrum.real.transpose(0, 3, 2, 1), spectrum.imag.transpose(0, 3, 2, 1)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("mode", MODES)
def test_stft_spectrogram_matches_a_direct_dft_in_float64(mode, data_format):
    x = RNG.normal(size=(2, 300, 3))
    w = scipy.signal.get_window("hann", 80, False)
    layer = layers.STFTSpectrogram(mode=mode, frame_length=80, frame_step=20, fft_length=128,
                                   data_format=data_format, dtype="float64")
    out = layer(_to_format(x, data_format)).data
    real, imag = _dft_reference(x, 80, 20, 128, w, "density")
    power = real ** 2 + imag ** 2
    psd = power.copy()
    psd[:, :, 1:-1] *= 2
    expected = {"real": real, "imag": imag, "angle": np.arctan2(imag, real),
                "stft": np.concatenate([real, imag], axis=2), "psd": psd,
                "magnitude": np.sqrt(np.maximum(power, 1e-7)),
                "log": np.log(np.maximum(np.sqrt(np.maximum(power, 1e-7)), 1e-7))}[mode]
    batch, channels, bins, frames = expected.shape
    expected = expected.reshape(batch, channels * bins, frames)
    if data_format == "channels_last":
        expected = expected.transpose(0, 2, 1)
    assert out.dtype == np.float64 and out.shape == layer.compute_output_shape(x.shape if
                                                                              data_format == "channels_last" else (2, 3, 300))
    if mode == "angle":      # +-pi where the imaginary part is a rounding error (DC, Nyquist)
        out, expected = _wrapped(out - expected), np.zeros_like(out)
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)


def test_stft_spectrogram_matches_scipy_signal_stft():
    x = RNG.normal(size=(1, 512, 1))
    layer = layers.STFTSpectrogram(mode="stft", frame_length=64, frame_step=16, fft_length=128,
                                   window="hann", periodic=True, scaling="spectrum",
                                   data_format="channels_first", dtype="float64")
    out = layer(x.transpose(0, 2, 1)).data[0]                 # (2 * bins, frames)
    _, _, z = scipy.signal.stft(x[0, :, 0], window="hann", nperseg=64, noverlap=48, nfft=128,
                                boundary=None, padded=False, detrend=False, scaling="spectrum")
    np.testing.assert_allclose(out, np.concatenate([z.real, z.imag]), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("mode", ["log", "angle", "stft", "psd"])
def test_stft_spectrogram_gradcheck(mode):
    layer = layers.STFTSpectrogram(mode=mode, frame_length=8, frame_step=3, fft_length=8,
                                   padding="same", dtype="float64")
    x = mn.tensor(RNG.normal(size=(2, 14, 2)), requires_grad=True)
    assert mn.gradcheck(layer, x)


def test_stft_spectrogram_weights_and_errors():
    layer = layers.STFTSpectrogram(mode="real", frame_length=32, fft_length=64)
    layer(np.zeros((1, 100, 1), np.float32))
    assert layer.imag_kernel is None and layer.real_kernel.shape == (33, 1, 32)
    assert [w.name.split("/")[-1] for w in layer.trainable_weights] == ["real_kernel"]
    expected = initializers.STFT("real")((32, 1, 33), "float32")
    np.testing.assert_array_equal(layer.real_kernel.data, expected.transpose(2, 1, 0))
    for kwargs, argument in ((dict(frame_step=300), "frame_step"), (dict(fft_length=100), "fft_length"),
                             (dict(mode="power"), "mode"), (dict(padding="causal"), "padding"),
                             (dict(scaling="psd"), "scaling")):
        with pytest.raises(ValueError, match=f"`{argument}`"):
            layers.STFTSpectrogram(**kwargs)
    with pytest.raises(ValueError):
        layers.STFTSpectrogram(window="no-such-window")
    with pytest.warns(UserWarning, match="power of two"):
        layers.STFTSpectrogram(frame_length=10, fft_length=12)
    # Inputs are cast to the layer's dtype, as for every minnet layer (Keras refuses ints).
    assert layers.STFTSpectrogram()(np.zeros((1, 300, 1), np.int32)).dtype == np.float32
    with pytest.raises(ValueError, match="3-D inputs"):
        layers.STFTSpectrogram()(np.zeros((300, 1), np.float32))
    again = layers.deserialize(layers.serialize(layers.STFTSpectrogram(mode="psd", window=[1.0, 2.0],
                                                                       frame_length=2)))
    assert again.mode == "psd" and again.get_config()["window"] == [1.0, 2.0]


def test_stft_initializer_layouts_and_errors():
    keras_layout = initializers.STFT("imag", "hamming", "spectrum", True)((20, 2, 17), "float64")
    conv_layout = initializers.STFT("imag", "hamming", "spectrum", True, layout="conv")((17, 2, 20),
                                                                                        "float64")
    np.testing.assert_array_equal(conv_layout, keras_layout.transpose(2, 1, 0))
    w = scipy.signal.get_window("hamming", 20, True)
    t, k = np.arange(20)[:, None], np.arange(17)[None, :]
    np.testing.assert_allclose(keras_layout[:, 0], np.sin(-2 * np.pi * t * k / 32) * w[:, None] / w.sum(),
                               rtol=1e-12, atol=1e-15)
    assert initializers.stft is initializers.STFTInitializer is initializers.STFT
    assert type(initializers.get("stft")) is initializers.STFT
    assert initializers.deserialize(initializers.serialize(
        initializers.STFT(layout="conv"))).layout == "conv"
    for kwargs, argument in ((dict(side="both"), "side"), (dict(scaling="psd"), "scaling"),
                             (dict(layout="torch"), "layout")):
        with pytest.raises(ValueError, match=f"`{argument}`"):
            initializers.STFT(**kwargs)
    with pytest.raises(ValueError, match="3-D kernel shape"):
        initializers.STFT()((4, 4), "float32")
    with pytest.raises(ValueError, match="window"):
        initializers.STFT(window=np.ones(3))((4, 1, 5), "float32")


@pytest.mark.parametrize("side", ["real", "imag"])
@pytest.mark.parametrize("window,scaling,periodic", [("hann", "density", False),
                                                      ("hamming", "spectrum", True),
                                                      (None, None, False)])
def test_stft_initializer_matches_keras(keras, side, window, scaling, periodic):
    theirs = np.asarray(keras.initializers.STFT(side, window, scaling, periodic)((256, 1, 257),
                                                                                 "float32"))
    ours = initializers.STFT(side, window, scaling, periodic)((256, 1, 257), "float32")
    # float32 arithmetic in Keras's order: the same kernel up to one rounding of cos/sin.
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1.2e-7)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("mode", MODES)
def test_stft_spectrogram_matches_keras(keras, mode, case, data_format):
    # its own seed, so the input does not depend on which tests ran before this one
    rng = np.random.default_rng(1000 + 10 * case + MODES.index(mode))
    x = _to_format(rng.normal(size=(2, 700, 2)).astype(np.float32), data_format)
    kwargs = dict(CASES[case], mode=mode, data_format=data_format)
    theirs = keras.layers.STFTSpectrogram(**kwargs)
    ours = layers.STFTSpectrogram(**kwargs)
    expected = theirs(x).detach().cpu().numpy()
    got = ours(x).data
    assert got.shape == expected.shape == ours.compute_output_shape(x.shape) \
        == tuple(theirs.compute_output_shape(x.shape))
    # float32 convolutions of up to 256 terms, summed in other orders: relative to the
    # largest output. The phase is ill-conditioned where the magnitude is tiny: left out there.
    # So is the log magnitude (d log m = dm / m), which is compared there relative to 1.
    if mode in ("angle", "log"):
        magnitude = layers.STFTSpectrogram(**dict(kwargs, mode="magnitude"))(x).data
        keep = magnitude > 1e-3 * magnitude.max()
        if mode == "angle":
            got, expected = _wrapped(got[keep] - expected[keep]), np.zeros(keep.sum())
        else:
            got, expected = got[keep], expected[keep]
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5 * max(np.abs(expected).max(), 1.0))


# ---- MelSpectrogram ---------------------------------------------------------------------
MEL_CASES = [dict(),
             dict(fft_length=512, sequence_stride=128, sequence_length=400, window="hamming",
                  num_mel_bins=40, sampling_rate=8000, min_freq=50.0, max_freq=3000.0),
             dict(power_to_db=False, mag_exp=1.0, fft_length=256, sequence_stride=100),
             dict(top_db=20.0, ref_power=2.0, fft_length=256, window=None)]


def _mel_reference(x, fft_length=2048, sequence_stride=512, sequence_length=None, window="hann",
                   sampling_rate=16000, num_mel_bins=128, min_freq=20.0, max_freq=None,
                   power_to_db=True, top_db=80.0, mag_exp=2.0, min_power=1e-10, ref_power=1.0):
    """The same steps in NumPy, float64: reflect padding, periodic window, rfft, HTK mel bank."""
    length = sequence_length or fft_length
    n = np.arange(length)
    w = np.ones(length) if window is None else \
        (0.5 if window == "hann" else 0.54) - (0.5 if window == "hann" else 0.46) * np.cos(2 * np.pi * n / length)
    left = (fft_length - length) // 2
    w = np.pad(w, (left, fft_length - length - left))
    padded = np.pad(x, [(0, 0), (fft_length // 2, fft_length // 2)], mode="reflect")
    n_frames = 1 + (padded.shape[1] - fft_length) // sequence_stride
    frames = np.stack([padded[:, i * sequence_stride:i * sequence_stride + fft_length]
                       for i in range(n_frames)], axis=1)
    spectrogram = np.abs(np.fft.rfft(frames * w, axis=-1)) ** mag_exp   # (batch, frames, bins)
    bins = spectrogram.shape[-1]
    hz = np.linspace(0, sampling_rate / 2, bins)
    mel = lambda f: 2595.0 * np.log10(1 + f / 700.0)                     # HTK, = 1127 ln(1 + f/700)
    edges = np.linspace(mel(min_freq), mel(max_freq or sampling_rate // 2), num_mel_bins + 2)
    bank = np.zeros((bins, num_mel_bins))
    for m in range(num_mel_bins):
        for j in range(1, bins):
            up = (mel(hz[j]) - edges[m]) / (edges[m + 1] - edges[m])
            down = (edges[m + 2] - mel(hz[j])) / (edges[m + 2] - edges[m + 1])
            bank[j, m] = max(0.0, min(up, down))
    out = spectrogram @ bank
    if power_to_db:
        out = 10 * np.log10(np.maximum(out, min_power)) - 10 * np.log10(max(abs(ref_power), min_power))
        if top_db is not None:
            out = np.maximum(out, out.max() - top_db)
    return out.transpose(0, 2, 1)


@pytest.mark.parametrize("case", range(len(MEL_CASES)))
def test_mel_spectrogram_matches_numpy_in_float64(case):
    x = RNG.normal(size=(2, 3000))
    layer = layers.MelSpectrogram(dtype="float64", **MEL_CASES[case])
    out = layer(x).data
    expected = _mel_reference(x, **MEL_CASES[case])
    assert out.shape == expected.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    one = layer(x[0]).data                                       # (samples,) -> (mels, frames)
    assert one.shape == expected.shape[1:]


def test_mel_spectrogram_gradcheck():
    layer = layers.MelSpectrogram(fft_length=16, sequence_stride=5, num_mel_bins=4,
                                  sampling_rate=100, min_freq=5.0, top_db=None, dtype="float64")
    x = mn.tensor(RNG.normal(size=(2, 30)), requires_grad=True)
    assert mn.gradcheck(layer, x)


def test_mel_spectrogram_errors_and_config():
    for kwargs, argument in ((dict(sequence_length=4096), "sequence_length"),
                             (dict(window="blackman"), "window"),
                             (dict(min_freq=9000.0), "max_freq"),
                             (dict(sequence_stride=0), "sequence_stride"),
                             (dict(num_mel_bins=0), "num_mel_bins")):
        with pytest.raises(ValueError, match=f"`{argument}`"):
            layers.MelSpectrogram(**kwargs)
    with pytest.raises(ValueError, match="longer than fft_length // 2"):
        layers.MelSpectrogram()(np.zeros((1, 1000), np.float32))
    with pytest.raises(ValueError, match=r"\(batch, samples\)"):
        layers.MelSpectrogram()(np.zeros((1, 3000, 1), np.float32))
    layer = layers.MelSpectrogram(num_mel_bins=40, max_freq=4000.0, top_db=None)
    again = layers.deserialize(layers.serialize(layer))
    assert again.get_config() == layer.get_config() and again.top_db is None


def test_mel_weight_matrix_matches_keras(keras):
    from minnet.layers.audio import mel_weight_matrix
    theirs = keras.layers.MelSpectrogram().linear_to_mel_weight_matrix(40, 257, 8000, 50.0, 3000.0)
    ours = mel_weight_matrix(40, 257, 8000, 50.0, 3000.0)
    # Keras's linspace runs in float32 whatever the dtype asked for: float32 cancellation in
    # (mel(f) - edge) of mels ~2000 (minnet's bank is float64).
    np.testing.assert_allclose(ours, theirs.cpu().numpy(), rtol=0, atol=2e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(MEL_CASES)))
def test_mel_spectrogram_matches_keras(keras, monkeypatch, case, dtype):
    from minnet.layers import audio
    x = RNG.normal(size=(2, 4000)).astype(dtype)
    theirs = keras.layers.MelSpectrogram(dtype=dtype, **MEL_CASES[case])
    ours = layers.MelSpectrogram(dtype=dtype, **MEL_CASES[case])
    loose = theirs(x).detach().cpu().numpy()
    got = ours(x).data
    assert got.shape == loose.shape and got.dtype == loose.dtype
    # Keras's float32 filter bank (above) moves the decibels by up to 1e-3.
    np.testing.assert_allclose(got, loose, rtol=0, atol=5e-5 * np.abs(loose).max())
    # Given Keras's bank, the rest (stft, power, decibels, clipping) agrees to float32 rounding.
    monkeypatch.setattr(audio, "mel_weight_matrix", lambda *args: np.asarray(
        theirs.linear_to_mel_weight_matrix(*args).cpu().numpy(), np.float64))
    np.testing.assert_allclose(ours(x).data, loose, rtol=0, atol=1e-6 * np.abs(loose).max())


def test_keras_files_both_ways(tmp_path, keras):
    pytest.importorskip("h5py")
    x = RNG.normal(size=(2, 600, 1)).astype(np.float32)
    model = mn.models.Sequential([mn.layers.Input((600, 1)),
                                  layers.STFTSpectrogram(mode="stft", frame_length=64, fft_length=64)])
    model(x)
    model.set_weights([w + RNG.uniform(0.01, 0.1, size=w.shape).astype(w.dtype)
                       for w in model.get_weights()])             # not the initial kernels
    model.save(tmp_path / "m.keras")
    k_model = keras.models.load_model(tmp_path / "m.keras")
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(np.asarray(k_model.predict(x, verbose=0)), expected, atol=2e-5)
    k_model.save(tmp_path / "k.keras")
    np.testing.assert_allclose(mn.models.load_model(tmp_path / "k.keras").predict(x, verbose=0),
                               expected, atol=2e-5)
    signal = RNG.normal(size=(2, 3000)).astype(np.float32)
    mel = mn.models.Sequential([mn.layers.Input((3000,)),
                                layers.MelSpectrogram(fft_length=256, num_mel_bins=32)])
    mel.save(tmp_path / "mel.keras")
    k_mel = keras.models.load_model(tmp_path / "mel.keras")
    assert k_mel.layers[0].get_config()["num_mel_bins"] == 32
    np.testing.assert_allclose(np.asarray(k_mel.predict(signal, verbose=0)),
                               mel.predict(signal, verbose=0), atol=2e-3)


def test_mel_output_shape_is_the_frames_returned(keras):
    # 2047 samples, stride 512: 1 + 2047 // 512 = 4 frames; Keras's compute_output_shape says 5.
    x = RNG.normal(size=(1, 2047)).astype(np.float32)
    ours = layers.MelSpectrogram(num_mel_bins=8)
    theirs = keras.layers.MelSpectrogram(num_mel_bins=8)
    assert ours(x).shape == ours.compute_output_shape(x.shape) == (1, 8, 4)
    assert tuple(theirs(x).shape) == (1, 8, 4)
    assert tuple(theirs.compute_output_shape(x.shape)) == (1, 8, 5)
