# Sequential().add(...) style, LeakyReLU, model.save/.keras and load_model, get_layer and shapes.
import os
import tempfile
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = (data["x_train"] / 255.0).reshape(-1, 28, 28, 1).astype("float32")
x_test = (data["x_test"] / 255.0).reshape(-1, 28, 28, 1).astype("float32")
y_train, y_test = data["y_train"], data["y_test"]

keras.utils.set_random_seed(0)
model = keras.Sequential(name="digits")
model.add(keras.Input(shape=(28, 28, 1)))
model.add(layers.Conv2D(16, 5, strides=2, padding="same", name="conv"))
model.add(layers.LeakyReLU())
model.add(layers.Conv2D(32, 3, strides=2, padding="same"))
model.add(layers.LeakyReLU(negative_slope=0.1))
model.add(layers.GlobalAveragePooling2D())
model.add(layers.Dense(10, activation="softmax", name="classifier"))
print("input shape:", model.input_shape, "output shape:", model.output_shape)
print("conv kernel:", model.get_layer("conv").get_weights()[0].shape)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=3e-3), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
model.fit(x_train, y_train, epochs=int(os.environ.get("EPOCHS", 30)), batch_size=32, verbose=2)
path = os.path.join(tempfile.mkdtemp(), "digits.keras")
model.save(path)
restored = keras.models.load_model(path)
np.testing.assert_allclose(restored.predict(x_test[:16]), model.predict(x_test[:16]), rtol=1e-5, atol=1e-6)
print("test_accuracy:", restored.evaluate(x_test, y_test, verbose=0)[1])
