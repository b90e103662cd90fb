# Modelled on keras-io examples/vision/mnist_convnet.py. Written here against the public Keras 3
# API, following the example's steps (its own text is not copied); changed: MNIST replaced by
# random 28x28 images, sizes and epochs small.
import numpy as np
import keras
from keras import layers

num_classes = 10
input_shape = (28, 28, 1)
rng = np.random.default_rng(0)
x_train = (rng.random((256, 28, 28)) * 255).astype("uint8")
y_train = rng.integers(0, 10, 256)
x_test, y_test = x_train[:64], y_train[:64]
x_train = x_train.astype("float32") / 255
x_test = x_test.astype("float32") / 255
x_train = np.expand_dims(x_train, -1)
x_test = np.expand_dims(x_test, -1)
print("x_train shape:", x_train.shape)
y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(8, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(16, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=128, epochs=1, validation_split=0.1, verbose=0)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
print("GUIDE OK")
