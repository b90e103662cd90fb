# Modelled on keras-io examples/keras_recipes/antirectifier.py. Written here against the public
# Keras 3 API, following the example's steps (its own text is not copied); changed: MNIST
# replaced by random arrays, sizes and epochs small.
import numpy as np
import keras
from keras import layers
from keras import ops


class Antirectifier(layers.Layer):
    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        output_dim = input_shape[-1]
        self.kernel = self.add_weight(shape=(output_dim * 2, output_dim), initializer=self.initializer,
                                      name="kernel", trainable=True)

    def call(self, inputs):
        inputs -= ops.mean(inputs, axis=-1, keepdims=True)
        pos = ops.relu(inputs)
        neg = ops.relu(-inputs)
        concatenated = ops.concatenate([pos, neg], axis=-1)
        mixed = ops.matmul(concatenated, self.kernel)
        return mixed

    def get_config(self):
        base_config = super().get_config()
        config = {"initializer": keras.initializers.serialize(self.initializer)}
        return dict(list(base_config.items()) + list(config.items()))


rng = np.random.default_rng(0)
x_train = rng.random((256, 784)).astype("float32")
y_train = rng.integers(0, 10, 256)
x_test, y_test = x_train[:64], y_train[:64]
model = keras.Sequential(
    [
        keras.Input(shape=(784,)),
        layers.Dense(32),
        Antirectifier(),
        layers.Dense(32),
        Antirectifier(),
        layers.Dropout(0.5),
        layers.Dense(10),
    ]
)
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              optimizer=keras.optimizers.RMSprop(), metrics=[keras.metrics.SparseCategoricalAccuracy()])
model.fit(x_train, y_train, batch_size=128, epochs=1, validation_split=0.15, verbose=0)
model.evaluate(x_test, y_test, verbose=0)
config = model.layers[1].get_config()
restored = Antirectifier.from_config(config)
print("GUIDE OK")
