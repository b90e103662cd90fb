# Modelled on keras-io examples/keras_recipes/subclassing_conv_layers.py. Written here against the
# public Keras 3 API, following the example's steps (its own text is not copied); changed: MNIST
# replaced by random images, sizes and epochs small.
import numpy as np
import keras
from keras import layers
from keras import ops


class StandardizedConv2DWithOverride(layers.Conv2D):
    def convolution_op(self, inputs, kernel):
        mean, var = ops.moments(kernel, axes=[0, 1, 2], keepdims=True)
        return ops.conv(inputs, (kernel - mean) / ops.sqrt(var + 1e-10), padding="valid",
                        strides=list(self.strides), dilation_rate=self.dilation_rate,
                        data_format=self.data_format)


class StandardizedConv2DWithCall(layers.Conv2D):
    def call(self, inputs):
        mean, var = ops.moments(self.kernel, axes=[0, 1, 2], keepdims=True)
        result = ops.conv(inputs, (self.kernel - mean) / ops.sqrt(var + 1e-10), padding="valid",
                          strides=list(self.strides), dilation_rate=self.dilation_rate,
                          data_format=self.data_format)
        if self.use_bias:
            result = result + self.bias
        return result


num_classes = 10
input_shape = (28, 28, 1)
rng = np.random.default_rng(0)
x_train = rng.random((128, 28, 28, 1)).astype("float32")
y_train = keras.utils.to_categorical(rng.integers(0, 10, 128), num_classes)
model = keras.Sequential(
    [
        keras.layers.Input(shape=input_shape),
        StandardizedConv2DWithCall(8, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        StandardizedConv2DWithOverride(16, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=64, epochs=1, validation_split=0.1, verbose=0)
print("GUIDE OK")
