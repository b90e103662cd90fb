# Modelled on keras-io guides/serialization_and_saving.py (commit ff6a507b2737777a8845ff9a2f1caf7f53ce3e78).
# Written here against the public Keras 3 API, following the guide's sections in order (the
# guide's own text is not copied); changed: random data, small sizes.
import numpy as np
import keras
from keras import ops


def get_model():
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(), loss="mean_squared_error")
    return model


model = get_model()
test_input = np.random.random((128, 32))
test_target = np.random.random((128, 1))
model.fit(test_input, test_target, verbose=0)
model.save("my_model.keras")
reconstructed_model = keras.models.load_model("my_model.keras")
np.testing.assert_allclose(model.predict(test_input, verbose=0), reconstructed_model.predict(test_input, verbose=0))


@keras.saving.register_keras_serializable(package="my_package", name="custom_fn")
def custom_fn(x):
    return x**2


@keras.saving.register_keras_serializable(package="MyLayers")
class CustomLayer(keras.layers.Layer):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {"factor": self.factor}


@keras.saving.register_keras_serializable(package="my_package")
class CustomModel(keras.Model):
    def __init__(self, hidden_units):
        super().__init__()
        self.hidden_units = hidden_units
        self.dense_layers = [keras.layers.Dense(u) for u in hidden_units]

    def call(self, inputs):
        x = inputs
        for layer in self.dense_layers:
            x = layer(x)
        return x

    def get_config(self):
        return {"hidden_units": self.hidden_units}


model = CustomModel([16, 16, 10])
_ = model(ops.ones((2, 8)))
model.save("subclassed.keras")
loaded = keras.models.load_model("subclassed.keras")
np.testing.assert_allclose(ops.convert_to_numpy(model(ops.ones((2, 8)))),
                           ops.convert_to_numpy(loaded(ops.ones((2, 8)))), rtol=1e-6)


@keras.saving.register_keras_serializable(package="my_package", name="custom_fn")
def custom_fn(x):
    return x**2


inputs = keras.Input(shape=(4,))
mid = CustomLayer(0.5)(inputs)
outputs = keras.layers.Dense(3, activation=custom_fn)(mid)
model = keras.Model(inputs, outputs)
model.compile(optimizer="rmsprop", loss="mean_squared_error")
config = model.get_config()
new_model = keras.Model.from_config(config)
model.save("custom_model.keras")
reconstructed_model = keras.models.load_model("custom_model.keras")
x = np.random.rand(2, 4)
np.testing.assert_allclose(model.predict(x, verbose=0), reconstructed_model.predict(x, verbose=0), rtol=1e-6)

with keras.saving.custom_object_scope({"custom_fn": custom_fn, "CustomLayer": CustomLayer}):
    reconstructed_model = keras.models.load_model("custom_model.keras")
reconstructed_model = keras.models.load_model(
    "custom_model.keras", custom_objects={"CustomLayer": CustomLayer, "custom_fn": custom_fn})

layer = keras.layers.Dense(3, activation="relu")
layer_config = layer.get_config()
new_layer = keras.layers.Dense.from_config(layer_config)

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
config = model.get_config()
new_model = keras.Sequential.from_config(config)

inputs = keras.Input((32,))
outputs = keras.layers.Dense(1)(inputs)
model = keras.Model(inputs, outputs)
config = model.get_config()
new_model = keras.Model.from_config(config)

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
json_config = model.to_json()
new_model = keras.models.model_from_json(json_config)

model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
new_model = keras.models.clone_model(model)

my_layer = keras.layers.Dense(4)
serialized = keras.saving.serialize_keras_object(my_layer)
restored_layer = keras.saving.deserialize_keras_object(serialized)


def create_layer():
    layer = keras.layers.Dense(64, activation="relu", name="dense_2")
    layer.build((None, 784))
    return layer


layer_1 = create_layer()
layer_2 = create_layer()
layer_2.set_weights(layer_1.get_weights())


def create_simple_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = keras.layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = keras.layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = keras.layers.Dense(10, name="predictions")(x)
    return keras.Model(inputs=inputs, outputs=outputs, name="3_layer_mlp")


functional_model = create_simple_model()
functional_model.save_weights("my_model.weights.h5")
new_model = create_simple_model()
new_model.load_weights("my_model.weights.h5")
for a, b in zip(functional_model.get_weights(), new_model.get_weights()):
    np.testing.assert_allclose(a, b)

inputs = keras.Input(shape=(784,), name="digits")
x = keras.layers.Dense(64, activation="relu", name="dense_1")(inputs)
x = keras.layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = keras.layers.Dense(10, name="predictions")(x)
pretrained = keras.Model(inputs=inputs, outputs=outputs, name="pretrained_mlp")
extracted_layers = pretrained.layers[:-1]
extracted_layers.append(keras.layers.Dense(5, name="dense_3"))
model = keras.Sequential(extracted_layers)
model.summary()
print("GUIDE OK")
