# A CNN whose first layer declares input_shape=(28, 28, 1); sparse labels; predict + argmax.
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"][..., np.newaxis] / 255.0
x_test = data["x_test"][..., np.newaxis] / 255.0
y_train, y_test = data["y_train"], data["y_test"]

keras.utils.set_random_seed(0)
model = keras.models.Sequential([
    layers.Conv2D(16, (3, 3), activation="relu", padding="same", input_shape=(28, 28, 1)),
    layers.MaxPooling2D((2, 2)),
    layers.Conv2D(32, (3, 3), activation="relu"),
    layers.MaxPooling2D((2, 2)),
    layers.Flatten(),
    layers.Dense(64, activation="relu"),
    layers.Dense(10),
])
model.compile(optimizer="adam",
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x_train, y_train, epochs=int(os.environ.get("EPOCHS", 8)), batch_size=32, verbose=2,
          validation_data=(x_test, y_test))
test_loss, test_acc = model.evaluate(x_test, y_test, verbose=2)
predictions = model.predict(x_test)
print("first predictions:", np.argmax(predictions[:10], axis=1), "labels:", y_test[:10])
print("test_accuracy:", test_acc)
