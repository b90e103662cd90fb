# Regression with EarlyStopping(restore_best_weights=True): predict the digit's mean ink and label.
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].reshape(-1, 784).astype("float32") / 255
x_test = data["x_test"].reshape(-1, 784).astype("float32") / 255
y_train = data["y_train"].astype("float32")
y_test = data["y_test"].astype("float32")

keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Dense(64, activation="relu", input_shape=[784]),
    layers.Dense(64, activation="relu"),
    layers.Dense(1),
])
model.compile(loss="mse", optimizer=keras.optimizers.RMSprop(0.001), metrics=["mae", "mse"])
early_stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True)
history = model.fit(x_train, y_train, epochs=int(os.environ.get("EPOCHS", 40)),
                    validation_split=0.2, verbose=0, callbacks=[early_stop])
print("epochs run:", len(history.history["loss"]))
loss, mae, mse = model.evaluate(x_test, y_test, verbose=2)
rounded = np.clip(np.round(model.predict(x_test).ravel()), 0, 9)
print("Testing set Mean Abs Error:", mae)
print("test_accuracy:", float(np.mean(rounded == y_test)))
