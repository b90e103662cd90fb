# SGD with momentum, ReduceLROnPlateau and ModelCheckpoint; sparse categorical crossentropy.
import os
import tempfile
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].reshape(-1, 28 * 28).astype("float32") / 255.0
x_test = data["x_test"].reshape(-1, 28 * 28).astype("float32") / 255.0
y_train, y_test = data["y_train"], data["y_test"]

keras.utils.set_random_seed(0)
inputs_dim = x_train.shape[1]
model = keras.Sequential([
    keras.Input(shape=(inputs_dim,)),
    layers.Dense(128, activation="relu", kernel_initializer="he_normal"),
    layers.BatchNormalization(),
    layers.Dense(10, activation="softmax"),
])
checkpoint_path = os.path.join(tempfile.mkdtemp(), "best.keras")
callbacks = [
    keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=1e-4),
    keras.callbacks.ModelCheckpoint(checkpoint_path, monitor="val_accuracy", save_best_only=True),
]
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x_train, y_train, validation_split=0.15, epochs=int(os.environ.get("EPOCHS", 12)),
          batch_size=32, callbacks=callbacks, verbose=2)
best = keras.models.load_model(checkpoint_path)
print("best checkpoint accuracy:", best.evaluate(x_test, y_test, verbose=0)[1])
print("test_accuracy:", model.evaluate(x_test, y_test, verbose=0)[1])
