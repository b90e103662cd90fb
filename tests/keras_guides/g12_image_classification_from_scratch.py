# Modelled on keras-io examples/vision/image_classification_from_scratch.py. Written here against
# the public Keras 3 API, following the example's steps (its own text is not copied); changed:
# the cats-vs-dogs directory and tf.data pipeline replaced by random NumPy images, sizes small,
# no plots.
import numpy as np
import keras
from keras import layers
from keras import ops

image_size = (32, 32)
rng = np.random.default_rng(0)
x = (rng.random((64,) + image_size + (3,)) * 255).astype("float32")
y = rng.integers(0, 2, 64).astype("float32")

data_augmentation_layers = [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)]


def data_augmentation(images):
    for layer in data_augmentation_layers:
        images = layer(images)
    return images


augmented = data_augmentation(x[:9])
assert tuple(augmented.shape) == (9, 32, 32, 3)


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(16, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for size in [16, 32]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    x = layers.SeparableConv2D(32, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


model = make_model(input_shape=image_size + (3,), num_classes=2)
epochs = 1
callbacks = [keras.callbacks.ModelCheckpoint("save_at_{epoch}.keras")]
model.compile(optimizer=keras.optimizers.Adam(3e-4),
              loss=keras.losses.BinaryCrossentropy(from_logits=True),
              metrics=[keras.metrics.BinaryAccuracy(name="acc")])
model.fit(data_augmentation(x), y, epochs=epochs, batch_size=16, callbacks=callbacks,
          validation_split=0.25, verbose=0)

img_array = ops.expand_dims(x[0], 0)
predictions = model.predict(img_array, verbose=0)
score = float(ops.sigmoid(predictions[0][0]))
print(f"This image is {100 * (1 - score):.2f}% cat and {100 * score:.2f}% dog.")
keras.models.load_model("save_at_1.keras")
print("GUIDE OK")
