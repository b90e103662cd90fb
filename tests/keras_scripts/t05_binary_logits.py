# Binary classifier on logits: BinaryCrossentropy(from_logits=True) with metrics=["accuracy"].
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].reshape(len(data["x_train"]), -1) / 255.0
x_test = data["x_test"].reshape(len(data["x_test"]), -1) / 255.0
y_train = (data["y_train"] >= 5).astype("float32")     # "is it 5..9?"
y_test = (data["y_test"] >= 5).astype("float32")

keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Input(shape=(784,)),
    layers.Dense(32, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x_train, y_train, epochs=int(os.environ.get("EPOCHS", 10)), batch_size=32, verbose=2)
loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
logits = model.predict(x_test, verbose=0)
print("accuracy from predict:", float(np.mean((logits[:, 0] > 0) == (y_test > 0.5))))
print("test_accuracy:", accuracy)
