# Modelled on keras-io guides/customizing_saving_and_serialization.py (commit
# f87f77b18ffe6299c474d91b37bd530f1390d39f). Written here against the public Keras 3 API,
# following the guide's sections in order (the guide's own text is not copied); changed: sizes small;
# left out: the save_own_variables/load_own_variables section (Keras 3.15.1 itself fails it as
# written: its load_own_variables assigns `self.weights` in an order that does not match the
# store), the assets and compile-config sections; added: a layer that holds a sublayer and
# serializes it (serialize_keras_object in get_config), from guides/serialization_and_saving.py.
import numpy as np
import keras
from keras import ops


@keras.saving.register_keras_serializable(package="my_custom_package")
class LayerWithCustomBuild(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return dict(units=self.units, **super().get_config())

    def build(self, input_shape, layer_init):
        super().build(input_shape)
        self._input_shape = input_shape
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer=layer_init,
                                 trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer=layer_init, trainable=True)
        self.layer_init = layer_init

    def get_build_config(self):
        build_config = {"layer_init": self.layer_init, "input_shape": self._input_shape}
        return build_config

    def build_from_config(self, config):
        self.build(config["input_shape"], config["layer_init"])


custom_layer = LayerWithCustomBuild(units=16)
custom_layer.build(input_shape=(8,), layer_init="random_normal")
model = keras.Sequential([custom_layer, keras.layers.Dense(1, activation="sigmoid")])
x = np.random.random((16, 8))
y = model(x)
model.save("custom_build_model.keras")
restored_model = keras.models.load_model("custom_build_model.keras")
np.testing.assert_equal(restored_model.layers[0].layer_init, "random_normal")
np.testing.assert_equal(restored_model.built, True)
np.testing.assert_allclose(ops.convert_to_numpy(restored_model.layers[0].w), ops.convert_to_numpy(custom_layer.w))


@keras.saving.register_keras_serializable(package="my_custom_package")
class CustomLayer(keras.layers.Layer):
    def __init__(self, sublayer, **kwargs):
        super().__init__(**kwargs)
        self.sublayer = sublayer

    def call(self, x):
        return self.sublayer(x)

    def get_config(self):
        base_config = super().get_config()
        config = {"sublayer": keras.saving.serialize_keras_object(self.sublayer)}
        return {**base_config, **config}

    @classmethod
    def from_config(cls, config):
        sublayer_config = config.pop("sublayer")
        sublayer = keras.saving.deserialize_keras_object(sublayer_config)
        return cls(sublayer, **config)


inputs = keras.Input((4,))
outputs = CustomLayer(keras.layers.Dense(8))(inputs)
model = keras.Model(inputs, outputs)
model.save("nested.keras")
restored = keras.models.load_model("nested.keras")
x = np.random.random((2, 4)).astype("float32")
np.testing.assert_allclose(model.predict(x, verbose=0), restored.predict(x, verbose=0), rtol=1e-6)
print("GUIDE OK")
