# Modelled on keras-io guides/training_with_built_in_methods.py (commit ad4fc805f5e1a4a4c0bcdd416aa9feac6608fb6c).
# Written here against the public Keras 3 API, following the guide's sections in order (the
# guide's own text is not copied); changed: MNIST replaced by random arrays, sizes and epochs
# small, the tf.data sections left out (TensorFlow), PyDataset kept.
import numpy as np
import keras
from keras import layers
from keras import ops

rng = np.random.default_rng(0)
inputs = keras.Input(shape=(784,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
model = keras.Model(inputs=inputs, outputs=outputs)

x_train = rng.random((512, 784)).astype("float32")
y_train = rng.integers(0, 10, 512).astype("float32")
x_val, y_val = x_train[-64:], y_train[-64:]
x_test, y_test = x_train[:64], y_train[:64]

model.compile(
    optimizer=keras.optimizers.RMSprop(),
    loss=keras.losses.SparseCategoricalCrossentropy(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
history = model.fit(x_train, y_train, batch_size=64, epochs=2, validation_data=(x_val, y_val), verbose=0)
print(history.history)
assert "val_sparse_categorical_accuracy" in history.history
results = model.evaluate(x_test, y_test, batch_size=128, verbose=0)
predictions = model.predict(x_test[:3], verbose=0)
print("predictions shape:", predictions.shape)


def get_uncompiled_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def get_compiled_model():
    model = get_uncompiled_model()
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy"])
    return model


def custom_mean_squared_error(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.Adam(), loss=custom_mean_squared_error)
y_train_one_hot = ops.one_hot(y_train, num_classes=10)
model.fit(x_train, y_train_one_hot, batch_size=64, epochs=1, verbose=0)


class CustomMSE(keras.losses.Loss):
    def __init__(self, regularization_factor=0.1, name="custom_mse"):
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true, y_pred):
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.Adam(), loss=CustomMSE())
model.fit(x_train, y_train_one_hot, batch_size=64, epochs=1, verbose=0)


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[CategoricalTruePositives()])
history = model.fit(x_train, y_train, batch_size=64, epochs=2, verbose=0)
assert "categorical_true_positives" in history.history


class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(ops.sum(inputs) * 0.1)
        return inputs


inputs = keras.Input(shape=(784,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
x = ActivityRegularizationLayer()(x)
x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, name="predictions")(x)
model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=0)


class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)
        return ops.softmax(logits)


inputs = keras.Input(shape=(3,), name="inputs")
targets = keras.Input(shape=(10,), name="targets")
logits = keras.layers.Dense(10)(inputs)
predictions = LogisticEndpoint(name="predictions")(targets, logits)
model = keras.Model(inputs=[inputs, targets], outputs=predictions)
model.compile(optimizer="adam")
data = {"inputs": np.random.random((3, 3)), "targets": np.random.random((3, 10))}
model.fit(data, verbose=0)

model = get_compiled_model()
model.fit(x_train, y_train, batch_size=64, validation_split=0.2, epochs=1, verbose=0)


class ExamplePyDataset(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x = x
        self.y = y
        self.batch_size = batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, idx):
        batch_x = self.x[idx * self.batch_size:(idx + 1) * self.batch_size]
        batch_y = self.y[idx * self.batch_size:(idx + 1) * self.batch_size]
        return batch_x, batch_y


train_py_dataset = ExamplePyDataset(x_train, y_train, batch_size=64)
val_py_dataset = ExamplePyDataset(x_val, y_val, batch_size=64)
model = get_compiled_model()
model.fit(train_py_dataset, validation_data=val_py_dataset, epochs=1, verbose=0)
model.evaluate(val_py_dataset, verbose=0)

class_weight = {i: 1.0 for i in range(10)}
class_weight[5] = 2.0
model = get_compiled_model()
model.fit(x_train, y_train, class_weight=class_weight, batch_size=64, epochs=1, verbose=0)
sample_weight = np.ones(shape=(len(y_train),))
sample_weight[y_train == 5] = 2.0
model = get_compiled_model()
model.fit(x_train, y_train, sample_weight=sample_weight, batch_size=64, epochs=1, verbose=0)

image_input = keras.Input(shape=(32, 32, 3), name="img_input")
timeseries_input = keras.Input(shape=(None, 10), name="ts_input")
x1 = layers.Conv2D(3, 3)(image_input)
x1 = layers.GlobalMaxPooling2D()(x1)
x2 = layers.Conv1D(3, 3)(timeseries_input)
x2 = layers.GlobalMaxPooling1D()(x2)
x = layers.concatenate([x1, x2])
score_output = layers.Dense(1, name="score_output")(x)
class_output = layers.Dense(5, name="class_output")(x)
model = keras.Model(inputs=[image_input, timeseries_input], outputs=[score_output, class_output])
model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss={"score_output": keras.losses.MeanSquaredError(),
          "class_output": keras.losses.CategoricalCrossentropy()},
    metrics={"score_output": [keras.metrics.MeanAbsolutePercentageError(), keras.metrics.MeanAbsoluteError()],
             "class_output": [keras.metrics.CategoricalAccuracy()]},
    loss_weights={"score_output": 2.0, "class_output": 1.0},
)
img_data = np.random.random_sample(size=(40, 32, 32, 3))
ts_data = np.random.random_sample(size=(40, 20, 10))
score_targets = np.random.random_sample(size=(40, 1))
class_targets = np.random.random_sample(size=(40, 5))
model.fit([img_data, ts_data], [score_targets, class_targets], batch_size=20, epochs=1, verbose=0)
model.fit({"img_input": img_data, "ts_input": ts_data},
          {"score_output": score_targets, "class_output": class_targets}, batch_size=20, epochs=1, verbose=0)

model = get_compiled_model()
callbacks = [keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=1e-2, patience=2, verbose=1)]
model.fit(x_train, y_train, epochs=3, batch_size=64, callbacks=callbacks, validation_split=0.2, verbose=0)


class LossHistory(keras.callbacks.Callback):
    def on_train_begin(self, logs):
        self.per_batch_losses = []

    def on_batch_end(self, batch, logs):
        self.per_batch_losses.append(logs.get("loss"))


history_cb = LossHistory()
model.fit(x_train, y_train, epochs=1, batch_size=64, callbacks=[history_cb], verbose=0)
assert len(history_cb.per_batch_losses) == 8

callbacks = [keras.callbacks.ModelCheckpoint(filepath="mymodel_{epoch}.keras", save_best_only=True,
                                             monitor="val_loss", verbose=1)]
model.fit(x_train, y_train, epochs=2, batch_size=64, callbacks=callbacks, validation_split=0.2, verbose=0)
restored = keras.models.load_model("mymodel_1.keras")

initial_learning_rate = 0.1
lr_schedule = keras.optimizers.schedules.ExponentialDecay(initial_learning_rate, decay_steps=100000,
                                                          decay_rate=0.96, staircase=True)
optimizer = keras.optimizers.RMSprop(learning_rate=lr_schedule)
model = get_uncompiled_model()
model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
model.fit(x_train, y_train, epochs=1, batch_size=64, verbose=0)
print("GUIDE OK")
