# evaluate(return_dict=True), class_weight, validation_data, history.history keys.
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].astype("float32").reshape(-1, 784) / 255.0
x_test = data["x_test"].astype("float32").reshape(-1, 784) / 255.0
y_train, y_test = data["y_train"].astype("int64"), data["y_test"].astype("int64")
class_weight = {i: 1.0 for i in range(10)}
class_weight[8] = 2.0

keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Dense(64, activation="tanh", input_shape=(784,)),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.002),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")])
history = model.fit(x_train, y_train, validation_data=(x_test, y_test), batch_size=64,
                    epochs=int(os.environ.get("EPOCHS", 10)), class_weight=class_weight, verbose=2)
print(sorted(history.history))
results = model.evaluate(x_test, y_test, return_dict=True, verbose=0)
print(results)
print("test_accuracy:", results["acc"])
