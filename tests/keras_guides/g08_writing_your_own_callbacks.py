# Modelled on keras-io guides/writing_your_own_callbacks.py (commit ad4fc805f5e1a4a4c0bcdd416aa9feac6608fb6c).
# Written here against the public Keras 3 API, following the guide's sections in order (the
# guide's own text is not copied); changed: MNIST replaced by random arrays, sizes small.
import numpy as np
import keras


def get_model():
    model = keras.Sequential()
    model.add(keras.layers.Dense(1))
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=0.1), loss="mean_squared_error",
                  metrics=["mean_absolute_error"])
    return model


rng = np.random.default_rng(0)
x_train = rng.random((256, 784)).astype("float32")
y_train = rng.random((256,)).astype("float32")
x_test, y_test = x_train[:64], y_train[:64]
x_train = x_train[-128:]
y_train = y_train[-128:]

seen = []


class CustomCallback(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_train_begin")
        print("Starting training; got log keys: {}".format(keys))

    def on_train_end(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_train_end")
        print("Stop training; got log keys: {}".format(keys))

    def on_epoch_begin(self, epoch, logs=None):
        keys = list(logs.keys())
        print("Start epoch {} of training; got log keys: {}".format(epoch, keys))

    def on_epoch_end(self, epoch, logs=None):
        keys = list(logs.keys())
        print("End epoch {} of training; got log keys: {}".format(epoch, keys))

    def on_test_begin(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_test_begin")

    def on_test_end(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_test_end")

    def on_predict_begin(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_predict_begin")

    def on_predict_end(self, logs=None):
        keys = list(logs.keys())
        seen.append("on_predict_end")

    def on_train_batch_begin(self, batch, logs=None):
        keys = list(logs.keys())

    def on_train_batch_end(self, batch, logs=None):
        keys = list(logs.keys())
        print("...Training: end of batch {}; got log keys: {}".format(batch, keys))

    def on_test_batch_begin(self, batch, logs=None):
        keys = list(logs.keys())

    def on_test_batch_end(self, batch, logs=None):
        keys = list(logs.keys())

    def on_predict_batch_begin(self, batch, logs=None):
        keys = list(logs.keys())

    def on_predict_batch_end(self, batch, logs=None):
        keys = list(logs.keys())


model = get_model()
model.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0, validation_split=0.5,
          callbacks=[CustomCallback()])
res = model.evaluate(x_test, y_test, batch_size=128, verbose=0, callbacks=[CustomCallback()])
res = model.predict(x_test, batch_size=128, callbacks=[CustomCallback()], verbose=0)
assert {"on_train_begin", "on_train_end", "on_test_begin", "on_predict_end"} <= set(seen)


class LossAndErrorPrintingCallback(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        print("Up to batch {}, the average loss is {:7.2f}.".format(batch, logs["loss"]))

    def on_test_batch_end(self, batch, logs=None):
        print("Up to batch {}, the average loss is {:7.2f}.".format(batch, logs["loss"]))

    def on_epoch_end(self, epoch, logs=None):
        print("The average loss for epoch {} is {:7.2f} and mean absolute error is {:7.2f}.".format(
            epoch, logs["loss"], logs["mean_absolute_error"]))


model = get_model()
model.fit(x_train, y_train, batch_size=64, epochs=2, verbose=0, callbacks=[LossAndErrorPrintingCallback()])
res = model.evaluate(x_test, y_test, batch_size=64, verbose=0, callbacks=[LossAndErrorPrintingCallback()])


class EarlyStoppingAtMinLoss(keras.callbacks.Callback):
    def __init__(self, patience=0):
        super().__init__()
        self.patience = patience
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = logs.get("loss")
        if np.less(current, self.best):
            self.best = current
            self.wait = 0
            self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True
                print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


model = get_model()
model.fit(x_train, y_train, batch_size=64, steps_per_epoch=2, epochs=6, verbose=0,
          callbacks=[LossAndErrorPrintingCallback(), EarlyStoppingAtMinLoss()])


class CustomLearningRateScheduler(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_epoch_begin(self, epoch, logs=None):
        if not hasattr(self.model.optimizer, "learning_rate"):
            raise ValueError('Optimizer must have a "learning_rate" attribute.')
        lr = self.model.optimizer.learning_rate
        scheduled_lr = self.schedule(epoch, lr)
        self.model.optimizer.learning_rate = scheduled_lr
        print(f"\nEpoch {epoch}: Learning rate is {float(np.array(scheduled_lr))}.")


LR_SCHEDULE = [(3, 0.05), (6, 0.01), (9, 0.005), (12, 0.001)]


def lr_schedule(epoch, lr):
    if epoch < LR_SCHEDULE[0][0] or epoch > LR_SCHEDULE[-1][0]:
        return lr
    for i in range(len(LR_SCHEDULE)):
        if epoch == LR_SCHEDULE[i][0]:
            return LR_SCHEDULE[i][1]
    return lr


model = get_model()
model.fit(x_train, y_train, batch_size=64, steps_per_epoch=2, epochs=5, verbose=0,
          callbacks=[LossAndErrorPrintingCallback(), CustomLearningRateScheduler(lr_schedule)])
np.testing.assert_allclose(float(np.array(model.optimizer.learning_rate)), 0.05, rtol=1e-6)
print("GUIDE OK")
