# Modelled on keras-io guides/sequential_model.py (commit ad4fc805f5e1a4a4c0bcdd416aa9feac6608fb6c).
# Written here against the public Keras 3 API, following the guide's steps in order (the guide's
# own text is not copied); changed: data are small random arrays, sizes are small, no plots.
import numpy as np
import keras
from keras import layers
from keras import ops

model = keras.Sequential(
    [
        layers.Dense(2, activation="relu", name="layer1"),
        layers.Dense(3, activation="relu", name="layer2"),
        layers.Dense(4, name="layer3"),
    ]
)
x = ops.ones((3, 3))
y = model(x)
print(tuple(y.shape))

layer1 = layers.Dense(2, activation="relu", name="layer1")
layer2 = layers.Dense(3, activation="relu", name="layer2")
layer3 = layers.Dense(4, name="layer3")
y = layer3(layer2(layer1(x)))
assert len(model.layers) == 3

model = keras.Sequential()
model.add(layers.Dense(2, activation="relu"))
model.add(layers.Dense(3, activation="relu"))
model.add(layers.Dense(4))
model.pop()
assert len(model.layers) == 2
model = keras.Sequential(name="my_sequential")

layer = layers.Dense(3)
assert len(layer.weights) == 0
x = ops.ones((1, 4))
y = layer(x)
assert len(layer.weights) == 2

model = keras.Sequential([layers.Dense(2, activation="relu"), layers.Dense(3, activation="relu"), layers.Dense(4)])
y = model(ops.ones((1, 4)))
print("Number of weights after calling the model:", len(model.weights))
model.summary()

model = keras.Sequential()
model.add(keras.Input(shape=(4,)))
model.add(layers.Dense(2, activation="relu"))
model.summary()
assert len(model.layers) == 1

model = keras.Sequential()
model.add(keras.Input(shape=(50, 50, 3)))
model.add(layers.Conv2D(8, 5, strides=2, activation="relu"))
model.add(layers.Conv2D(8, 3, activation="relu"))
model.add(layers.MaxPooling2D(3))
model.summary()
model.add(layers.Conv2D(8, 3, activation="relu"))
model.add(layers.Conv2D(8, 3, activation="relu"))
model.add(layers.GlobalMaxPooling2D())
model.add(layers.Dense(10))

initial_model = keras.Sequential(
    [
        keras.Input(shape=(50, 50, 3)),
        layers.Conv2D(8, 5, strides=2, activation="relu"),
        layers.Conv2D(8, 3, activation="relu"),
        layers.Conv2D(8, 3, activation="relu"),
    ]
)
feature_extractor = keras.Model(
    inputs=initial_model.inputs,
    outputs=[layer.output for layer in initial_model.layers],
)
x = ops.ones((1, 50, 50, 3))
features = feature_extractor(x)
assert len(features) == 3

initial_model = keras.Sequential(
    [
        keras.Input(shape=(50, 50, 3)),
        layers.Conv2D(8, 5, strides=2, activation="relu"),
        layers.Conv2D(8, 3, activation="relu", name="my_intermediate_layer"),
        layers.Conv2D(8, 3, activation="relu"),
    ]
)
feature_extractor = keras.Model(
    inputs=initial_model.inputs,
    outputs=initial_model.get_layer(name="my_intermediate_layer").output,
)
features = feature_extractor(x)
print(tuple(features.shape))

# Transfer learning: freeze all layers but the last.
model = keras.Sequential([keras.Input(shape=(784,)), layers.Dense(32, activation="relu"),
                          layers.Dense(32, activation="relu"), layers.Dense(32, activation="relu"),
                          layers.Dense(10)])
for layer in model.layers[:-1]:
    layer.trainable = False
model.compile(optimizer="adam", loss="mse")
rng = np.random.default_rng(0)
before = [w.copy() for w in model.layers[0].get_weights()]
model.fit(rng.random((16, 784)).astype("float32"), rng.random((16, 10)).astype("float32"), epochs=1, verbose=0)
assert all(np.array_equal(a, b) for a, b in zip(before, model.layers[0].get_weights()))
assert len(model.trainable_weights) == 2
print("GUIDE OK")
