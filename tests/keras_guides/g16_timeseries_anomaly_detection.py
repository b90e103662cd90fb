# Modelled on keras-io examples/timeseries/timeseries_anomaly_detection.py. Written here against
# the public Keras 3 API, following the example's steps (its own text is not copied); changed:
# the NAB csv download replaced by a synthetic sine series, sizes and epochs small, no plots.
import numpy as np
import keras
from keras import layers

t = np.arange(600, dtype="float32")
values = np.sin(t / 10.0) + 0.05 * np.random.default_rng(0).standard_normal(600).astype("float32")
training_mean = values.mean()
training_std = values.std()
df_training_value = (values - training_mean) / training_std
TIME_STEPS = 32


def create_sequences(values, time_steps=TIME_STEPS):
    output = []
    for i in range(len(values) - time_steps + 1):
        output.append(values[i:(i + time_steps)])
    return np.stack(output)


x_train = create_sequences(df_training_value.reshape(-1, 1))
print("Training input shape: ", x_train.shape)

model = keras.Sequential(
    [
        layers.Input(shape=(x_train.shape[1], x_train.shape[2])),
        layers.Conv1D(filters=8, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Dropout(rate=0.2),
        layers.Conv1D(filters=4, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Conv1DTranspose(filters=4, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Dropout(rate=0.2),
        layers.Conv1DTranspose(filters=8, kernel_size=7, padding="same", strides=2, activation="relu"),
        layers.Conv1DTranspose(filters=1, kernel_size=7, padding="same"),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss="mse")
model.summary()
history = model.fit(x_train, x_train, epochs=2, batch_size=64, validation_split=0.1,
                    callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, mode="min")],
                    verbose=0)
x_train_pred = model.predict(x_train, verbose=0)
train_mae_loss = np.mean(np.abs(x_train_pred - x_train), axis=1)
threshold = np.max(train_mae_loss)
print("Reconstruction error threshold: ", threshold)
assert x_train_pred.shape == x_train.shape
print("GUIDE OK")
