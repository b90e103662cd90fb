# "Simple MNIST convnet" (keras.io/examples/vision/mnist_convnet), on 28x28 digits.
import os
import numpy as np
import keras
from keras import layers

num_classes = 10
input_shape = (28, 28, 1)
data = np.load(os.path.join(os.environ.get("TUTORIAL_DATA", "."), "digits28.npz"))
x_train = data["x_train"].astype("float32") / 255
x_test = data["x_test"].astype("float32") / 255
x_train = np.expand_dims(x_train, -1)
x_test = np.expand_dims(x_test, -1)
y_train = keras.utils.to_categorical(data["y_train"], num_classes)
y_test = keras.utils.to_categorical(data["y_test"], num_classes)

keras.utils.set_random_seed(0)
model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=128, epochs=int(os.environ.get("EPOCHS", 15)),
          validation_split=0.1, verbose=2)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("test_accuracy:", score[1])
