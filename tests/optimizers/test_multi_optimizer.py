"""OptimizerMap and MultiOptimizer (issue 28): Keras's lookup rule, routing, errors, state,
config, and Keras 3 as the oracle for a model trained with two optimizers."""
import numpy as np
import pytest

import minnet as mn
from minnet import optimizers
from minnet.optimizers import MultiOptimizer, OptimizerMap

RNG = np.random.default_rng(28)


def _model():
    mn.manual_seed(0)
    return mn.models.Sequential([mn.layers.Input((4,)), mn.layers.Dense(3, name="encoder"),
                                 mn.layers.Dense(2, name="head")])


def test_lookup_exact_then_fullmatch_then_default():
    adam, sgd, rms = optimizers.Adam(), optimizers.SGD(), optimizers.RMSprop()
    opt_map = OptimizerMap(default_optimizer=rms)
    opt_map["encoder/layer_0/dense"] = adam
    opt_map["encoder/.*"] = sgd
    opt_map["decoder"] = adam
    assert opt_map["decoder"] is adam
    assert opt_map["encoder/layer_0/dense"] is adam            # exact key wins over the pattern
    assert opt_map["encoder/layer_0/attention/query"] is sgd
    assert opt_map["decoder/layer_0/dense"] is rms             # fullmatch, not search
    assert len(opt_map) == 3 and list(opt_map) == ["encoder/layer_0/dense", "encoder/.*", "decoder"]
    del opt_map["decoder"]
    assert opt_map["decoder"] is rms


def test_lookup_errors():
    opt_map = OptimizerMap(optimizers.SGD(), {"a.*": optimizers.Adam(), ".*b": optimizers.Adam()})
    with pytest.raises(ValueError, match="Multiple optimizers assigned to variable ab"):
        opt_map["ab"]
    with pytest.raises(ValueError, match="already exists"):
        opt_map["a.*"] = optimizers.SGD()
    with pytest.raises(ValueError, match="expected a str"):
        opt_map[3] = optimizers.SGD()
    with pytest.raises(TypeError, match="`default_optimizer`"):
        OptimizerMap("sgd")
    with pytest.raises(TypeError, match="`optimizer_map`"):
        OptimizerMap(optimizers.SGD(), [("a", optimizers.SGD())])
    with pytest.raises(TypeError, match="expected a minnet Optimizer"):
        opt_map["c"] = "adam"
    with pytest.raises(ValueError, match="LossScaleOptimizer cannot be used"):
        opt_map["c"] = optimizers.LossScaleOptimizer(optimizers.SGD())
    with pytest.raises(ValueError, match="MultiOptimizer cannot be used"):
        opt_map["c"] = MultiOptimizer(OptimizerMap(optimizers.SGD()))
    with pytest.raises(TypeError, match="`optimizer_map`"):
        MultiOptimizer("adam")


def test_routing_and_pytorch_style_loop_match_separate_optimizers():
    model, twin = _model(), _model()
    x = RNG.normal(size=(8, 4)).astype(np.float32)
    y = RNG.normal(size=(8, 2)).astype(np.float32)
    model(x), twin(x)
    opt = MultiOptimizer(OptimizerMap(optimizers.SGD(0.1), {"encoder/.*": optimizers.Adam(0.01)}),
                         params=model.parameters())
    sgd, adam = opt.optimizers[1], opt.optimizers[0]
    assert [p.name for p in adam.params] == ["encoder/kernel", "encoder/bias"]
    assert [p.name for p in sgd.params] == ["head/kernel", "head/bias"]
    encoder = [p for p in twin.parameters() if p.name.startswith("encoder")]
    head = [p for p in twin.parameters() if p.name.startswith("head")]
    by_hand = [optimizers.Adam(encoder, learning_rate=0.01), optimizers.SGD(head, learning_rate=0.1)]
    loss = mn.losses.MeanSquaredError()
    for _ in range(3):
        for net, stepper in ((model, [opt]), (twin, by_hand)):
            for o in stepper:
                o.zero_grad()
            loss(mn.Tensor(y), net(x)).backward()
            for o in stepper:
                o.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.data, b.data)
    assert opt.iterations == 3 and adam.iterations == sgd.iterations == 3
    assert opt.name == "multi_optimizer"                       # Keras's default name


def test_callable_selector_and_learning_rate_refused():
    chosen = {}

    def selector(parameter):
        name = "adam" if "encoder" in parameter.name else "sgd"
        return chosen.setdefault(name, optimizers.get(name))

    model = _model()
    opt = MultiOptimizer(selector)
    model.compile(optimizer=opt, loss="mse")
    model.fit(RNG.normal(size=(8, 4)), RNG.normal(size=(8, 2)), batch_size=4, epochs=1, verbose=0)
    assert opt.optimizers == [chosen["adam"], chosen["sgd"]] and opt.iterations == 2
    with pytest.raises(AttributeError, match="cannot be accessed on a MultiOptimizer"):
        opt.learning_rate
    with pytest.raises(AttributeError, match="cannot be set on a MultiOptimizer"):
        opt.learning_rate = 0.1
    assert not hasattr(opt, "lr")
    with pytest.raises(TypeError, match="from a callable cannot be serialized"):
        opt.get_config()
    bad = MultiOptimizer(lambda p: "adam")
    with pytest.raises(TypeError, match="parameter 'encoder/kernel'"):
        _model().compile(optimizer=bad, loss="mse")


def test_config_round_trip_and_state_dict():
    opt = MultiOptimizer(OptimizerMap(optimizers.SGD(0.1, momentum=0.9),
                                      {".*encoder/.*": optimizers.Adam(0.01)}),
                         loss_scale_factor=None, name="two")
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, MultiOptimizer) and again.name == "two"
    assert [type(o).__name__ for o in again.optimizers] == ["Adam", "SGD"]
    assert again.optimizers[1].momentum == 0.9 and again.optimizers[0].learning_rate == 0.01

    model = _model()
    model.compile(optimizer=opt, loss="mse")
    x, y = RNG.normal(size=(8, 4)), RNG.normal(size=(8, 2))
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    state = opt.state_dict()
    assert state["iterations"] == 2 and "optimizers.0.state.0.exp_avg" in state
    assert "optimizers.1.state.2.momentum_buffer" not in state     # SGD holds head's 2 params
    fresh = MultiOptimizer(OptimizerMap(optimizers.SGD(0.1, momentum=0.9),
                                        {".*encoder/.*": optimizers.Adam(0.01)}))
    fresh.set_parameters(model.parameters())
    fresh.load_state_dict(state)
    assert fresh.iterations == 2 and fresh.optimizers[0].iterations == 2
    for key, value in state.items():
        np.testing.assert_array_equal(fresh.state_dict()[key], value)
    with pytest.raises(ValueError, match="'optimizers.<k>.<key>'"):
        fresh.load_state_dict({"iterations": 1, "optimizers.7.iterations": 1})


@pytest.fixture
def float64(keras):
    """Both frameworks in float64: Adam's first steps divide by sqrt(v) ~ |g|, which magnifies
    float32 rounding where a gradient is near 0."""
    saved = keras.config.floatx(), keras.config.dtype_policy(), mn.config.floatx()
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")      # another test may have set a float32 policy
    mn.config.set_floatx("float64")
    yield
    keras.config.set_floatx(saved[0])
    keras.config.set_dtype_policy(saved[1])
    mn.config.set_floatx(saved[2])


@pytest.mark.slow_once
def test_matches_keras_adam_on_the_encoder_sgd_elsewhere(keras, float64):
    x = RNG.normal(size=(16, 4))
    y = RNG.normal(size=(16, 2))
    keras.utils.set_random_seed(5)
    k_model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="encoder"),
                                keras.layers.Dense(2, name="head")])
    model = _model()
    model(x)
    for k_layer, layer in zip(k_model.layers, model.layers):
        kernel, bias = k_layer.get_weights()
        layer.kernel.data[...] = kernel.T
        layer.bias.data[...] = bias
    # Keras's paths inside a Sequential are "sequential/encoder/kernel": one pattern for both.
    # A tiny epsilon: Keras adds it to sqrt(v) before the bias correction, minnet after
    # (PyTorch's Adam, docs/optimizers.md), a 1e-6 difference at epsilon=1e-7.
    k_model.compile(optimizer=keras.optimizers.MultiOptimizer(keras.optimizers.OptimizerMap(
        keras.optimizers.SGD(0.1), {".*encoder/.*": keras.optimizers.Adam(0.01, epsilon=1e-14)})),
        loss="mse")
    model.compile(optimizer=MultiOptimizer(OptimizerMap(
        optimizers.SGD(0.1), {".*encoder/.*": optimizers.Adam(0.01, epsilon=1e-14)})), loss="mse")
    k_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert [type(o).__name__ for o in model.optimizer.optimizers] == \
        [type(o).__name__ for o in k_model.optimizer.optimizers] == ["Adam", "SGD"]
    for k_layer, layer in zip(k_model.layers, model.layers):
        kernel, bias = k_layer.get_weights()
        assert layer.kernel.dtype == kernel.dtype == np.float64
        # 1e-6 rtol, 1e-7 atol: Keras keeps the learning rate as a float32 variable (0.01 -> 0.0099999998).
        np.testing.assert_allclose(layer.kernel.data, kernel.T, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(layer.bias.data, bias, rtol=1e-6, atol=1e-7)
    assert model.optimizer.iterations == int(k_model.optimizer.iterations.numpy()) == 8


def test_model_save_keeps_the_sub_optimizers_and_their_state(tmp_path):
    model = _model()
    model.compile(optimizer=MultiOptimizer(OptimizerMap(optimizers.SGD(0.1, momentum=0.9),
                                                        {"encoder/.*": optimizers.Adam(0.01)})),
                  loss="mse")
    x, y = RNG.normal(size=(8, 4)), RNG.normal(size=(8, 2))
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    model.save(tmp_path / "two.mnet")
    again = mn.models.load_model(tmp_path / "two.mnet")
    assert isinstance(again.optimizer, MultiOptimizer) and again.optimizer.iterations == 2
    for key, value in model.optimizer.state_dict().items():
        np.testing.assert_array_equal(again.optimizer.state_dict()[key], value)


def test_keras_files_carry_the_multi_optimizer_both_ways(tmp_path, keras):
    pytest.importorskip("h5py")
    model = _model()
    model.compile(optimizer=MultiOptimizer(OptimizerMap(optimizers.SGD(0.1, momentum=0.9),
                                                        {".*encoder/.*": optimizers.Adam(0.01)})),
                  loss="mse")
    model.save(tmp_path / "m.keras")
    k_model = keras.models.load_model(tmp_path / "m.keras")
    assert type(k_model.optimizer).__name__ == "MultiOptimizer"
    assert [(type(o).__name__, round(float(o.learning_rate), 6)) for o in k_model.optimizer.optimizers] \
        == [("Adam", 0.01), ("SGD", 0.1)]
    assert float(k_model.optimizer.optimizers[1].momentum) == 0.9
    k_model.save(tmp_path / "k.keras")
    again = mn.models.load_model(tmp_path / "k.keras")
    assert isinstance(again.optimizer, MultiOptimizer)
    assert [(type(o).__name__, round(o.learning_rate, 6)) for o in again.optimizer.optimizers] \
        == [("Adam", 0.01), ("SGD", 0.1)]
    assert [p.name for p in again.optimizer.optimizers[0].params] == ["encoder/kernel", "encoder/bias"]


def test_apply_routes_gradients_and_builds_new_variables():
    a = mn.Parameter(np.ones(3), name="encoder/kernel")
    b = mn.Parameter(np.ones(2), name="head/kernel")
    opt = MultiOptimizer(OptimizerMap(optimizers.SGD(0.1), {"encoder/.*": optimizers.SGD(1.0)}))
    opt.apply([np.ones(3), np.ones(2)], [a, b])
    np.testing.assert_array_equal(a.data, np.zeros(3))
    np.testing.assert_array_equal(b.data, np.full(2, 0.9))
    assert a.grad is None and opt.iterations == 1
    c = mn.Parameter(np.ones(1), name="encoder/bias")            # a variable seen later
    opt.apply([np.ones(3), np.ones(2), np.ones(1)], [a, b, c])
    np.testing.assert_array_equal(c.data, np.zeros(1))
    assert [len(o.params) for o in opt.optimizers] == [2, 1] and opt.iterations == 2
