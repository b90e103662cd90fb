# Modelled on keras-io guides/writing_a_custom_training_loop_in_torch.py (commit
# 2faba87a9d8e30103405c2788bd32e8e84e5eff7), the part that uses Keras's own optimizer and loss.
# Written here against the public Keras 3 API, following the guide's steps in order (the guide's
# own text is not copied); changed: the torch DataLoader of MNIST replaced by NumPy batches of
# random data, sizes small; `torch.no_grad` is imported by name (under minnet: `minnet.no_grad`).
# The guide's first loop (torch.optim.Adam on model.parameters()) is backend-specific and left out.
import numpy as np
import keras
from keras import layers
from keras import ops
from torch import no_grad


def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    return keras.Model(inputs=inputs, outputs=outputs)


rng = np.random.default_rng(0)
x_train = rng.random((256, 784)).astype("float32")
y_train = keras.utils.to_categorical(rng.integers(0, 10, 256), 10)
x_val, y_val = x_train[:64], y_train[:64]
batch_size = 32


def batches(x, y):
    for i in range(0, len(x), batch_size):
        yield x[i:i + batch_size], y[i:i + batch_size]


model = get_model()
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.CategoricalAccuracy()
val_acc_metric = keras.metrics.CategoricalAccuracy()

for epoch in range(2):
    for step, (inputs, targets) in enumerate(batches(x_train, y_train)):
        logits = model(inputs, training=True)
        loss = loss_fn(targets, logits)
        model.zero_grad()
        loss.backward()
        trainable_weights = [v for v in model.trainable_weights]
        gradients = [v.value.grad for v in trainable_weights]
        with no_grad():
            optimizer.apply(gradients, trainable_weights)
        train_acc_metric.update_state(targets, logits)
        if step % 4 == 0:
            print(f"Training loss at step {step}: {ops.convert_to_numpy(loss):.4f}")
    train_acc = train_acc_metric.result()
    print(f"Training acc over epoch: {float(train_acc):.4f}")
    train_acc_metric.reset_state()
    for x_batch_val, y_batch_val in batches(x_val, y_val):
        val_logits = model(x_batch_val, training=False)
        val_acc_metric.update_state(y_batch_val, val_logits)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_state()
    print(f"Validation acc: {float(val_acc):.4f}")


class ActivityRegularizationLayer(keras.layers.Layer):
    def call(self, x):
        self.add_loss(1e-2 * ops.sum(x))
        return x


inputs = keras.Input(shape=(784,), name="digits")
x = keras.layers.Dense(64, activation="relu")(inputs)
x = ActivityRegularizationLayer()(x)
x = keras.layers.Dense(64, activation="relu")(x)
outputs = keras.layers.Dense(10, name="predictions")(x)
model = keras.Model(inputs=inputs, outputs=outputs)
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
for step, (inputs, targets) in enumerate(batches(x_train, y_train)):
    logits = model(inputs, training=True)
    loss = loss_fn(targets, logits)
    if model.losses:
        loss = loss + ops.sum(model.losses)
    model.zero_grad()
    loss.backward()
    trainable_weights = [v for v in model.trainable_weights]
    gradients = [v.value.grad for v in trainable_weights]
    with no_grad():
        optimizer.apply(gradients, trainable_weights)
assert len(model.losses) == 1
print("GUIDE OK")
