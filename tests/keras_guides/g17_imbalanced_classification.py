# Modelled on keras-io examples/structured_data/imbalanced_classification.py. Written here against
# the public Keras 3 API, following the example's steps (its own text is not copied); changed:
# the credit-card csv download replaced by random features with rare positives, sizes small.
import numpy as np
import keras

rng = np.random.default_rng(0)
features = rng.standard_normal((600, 30)).astype("float32")
targets = (rng.random(600) < 0.05).astype("uint8")
num_val_samples = int(len(features) * 0.2)
train_features = features[:-num_val_samples]
train_targets = targets[:-num_val_samples]
val_features = features[-num_val_samples:]
val_targets = targets[-num_val_samples:]
counts = np.bincount(train_targets)
mean = np.mean(train_features, axis=0)
train_features -= mean
val_features -= mean
std = np.std(train_features, axis=0)
train_features /= std
val_features /= std

model = keras.Sequential(
    [
        keras.Input(shape=train_features.shape[1:]),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(1, activation="sigmoid"),
    ]
)
model.summary()
metrics = [
    keras.metrics.FalseNegatives(name="fn"),
    keras.metrics.FalsePositives(name="fp"),
    keras.metrics.TrueNegatives(name="tn"),
    keras.metrics.TruePositives(name="tp"),
    keras.metrics.Precision(name="precision"),
    keras.metrics.Recall(name="recall"),
]
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy", metrics=metrics)
callbacks = [keras.callbacks.ModelCheckpoint("fraud_model_at_epoch_{epoch}.keras")]
weight_for_0 = 1.0 / counts[0]
weight_for_1 = 1.0 / counts[1]
class_weight = {0: weight_for_0, 1: weight_for_1}
history = model.fit(train_features, train_targets, batch_size=128, epochs=2, verbose=0, callbacks=callbacks,
                    validation_data=(val_features, val_targets), class_weight=class_weight)
h = history.history
assert {"fn", "fp", "tn", "tp", "precision", "recall", "val_tp"} <= set(h)
assert all(v >= 0 for name in ("fn", "fp", "tn", "tp") for v in h[name])
print("GUIDE OK")
