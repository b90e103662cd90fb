# CIFAR-shaped CNN with BatchNormalization(momentum=0.9) and Dropout (32x32x3 coloured digits).
import os
import numpy as np
import keras
from keras import layers

data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits32rgb.npz"))
x_train = data["x_train"].astype("float32") / 255.0
x_test = data["x_test"].astype("float32") / 255.0
y_train = keras.utils.to_categorical(data["y_train"], 10)
y_test = keras.utils.to_categorical(data["y_test"], 10)

keras.utils.set_random_seed(0)
model = keras.Sequential()
model.add(layers.Conv2D(32, (3, 3), padding="same", input_shape=x_train.shape[1:]))
model.add(layers.BatchNormalization(momentum=0.9))
model.add(layers.Activation("relu"))
model.add(layers.Conv2D(32, (3, 3)))
model.add(layers.BatchNormalization(momentum=0.9))
model.add(layers.Activation("relu"))
model.add(layers.MaxPooling2D(pool_size=(2, 2)))
model.add(layers.Dropout(0.25))
model.add(layers.Conv2D(64, (3, 3), padding="same", activation="relu"))
model.add(layers.MaxPooling2D(pool_size=(2, 2)))
model.add(layers.Dropout(0.25))
model.add(layers.Flatten())
model.add(layers.Dense(128, activation="relu"))
model.add(layers.Dropout(0.5))
model.add(layers.Dense(10, activation="softmax"))
model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(learning_rate=1e-3),
              metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=32, epochs=int(os.environ.get("EPOCHS", 10)),
          validation_data=(x_test, y_test), shuffle=True, verbose=2)
scores = model.evaluate(x_test, y_test, verbose=1)
print("Test loss:", scores[0])
print("test_accuracy:", scores[1])
