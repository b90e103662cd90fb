# CIFAR-shaped: Conv2D stacks with kernel_initializer/regularizer-free Keras defaults,
# AveragePooling2D, Flatten, Dense softmax, optimizer by string with learning-rate object.
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits32rgb.npz"))
(x_train, y_train), (x_test, y_test) = (data["x_train"], data["y_train"]), (data["x_test"], data["y_test"])
x_train, x_test = x_train / 255.0, x_test / 255.0

keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Input(shape=(32, 32, 3)),
    layers.Conv2D(32, (3, 3), activation="relu"),
    layers.MaxPooling2D((2, 2)),
    layers.Conv2D(64, (3, 3), activation="relu"),
    layers.AveragePooling2D((2, 2)),
    layers.Conv2D(64, (3, 3), activation="relu"),
    layers.Flatten(),
    layers.Dense(64, activation="relu"),
    layers.Dense(10),
])
model.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(x_train, y_train, epochs=int(os.environ.get("EPOCHS", 10)),
                    validation_data=(x_test, y_test), verbose=2)
test_loss, test_acc = model.evaluate(x_test, y_test, verbose=2)
print("test_accuracy:", test_acc)
