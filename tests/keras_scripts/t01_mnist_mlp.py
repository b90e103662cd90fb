# MNIST MLP, as in the Keras tutorials: to_categorical, input_shape=, Dropout, softmax output.
import os
import numpy as np
import keras
from keras import layers
from keras.utils import to_categorical

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].reshape(-1, 784).astype("float32") / 255
x_test = data["x_test"].reshape(-1, 784).astype("float32") / 255
y_train = to_categorical(data["y_train"], 10)
y_test = to_categorical(data["y_test"], 10)

keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Dense(256, activation="relu", input_shape=(784,)),
    layers.Dropout(0.2),
    layers.Dense(128, activation="relu"),
    layers.Dropout(0.2),
    layers.Dense(10, activation="softmax"),
])
model.summary()
model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.RMSprop(), metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=64, epochs=int(os.environ.get("EPOCHS", 10)),
                    verbose=2, validation_split=0.1)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("test_accuracy:", score[1])
