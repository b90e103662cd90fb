# Modelled on keras-io examples/keras_recipes/endpoint_layer_pattern.py. Written here against the
# public Keras 3 API, following the example's steps (its own text is not copied); changed: sizes
# small.
import numpy as np
import keras
from keras import ops


class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
        self.accuracy_metric = keras.metrics.BinaryAccuracy()

    def call(self, logits, targets=None, sample_weight=None):
        if targets is not None:
            loss = self.loss_fn(targets, logits, sample_weight)
            self.add_loss(loss)
            self.accuracy_metric.update_state(targets, logits, sample_weight)
        return ops.softmax(logits)


layer = LogisticEndpoint()
targets = ops.ones((2, 2))
logits = ops.ones((2, 2))
y = layer(logits, targets)
print("layer.losses:", layer.losses)
assert len(layer.losses) == 1

inputs = keras.Input((764,), name="inputs")
logits = keras.layers.Dense(1)(inputs)
targets = keras.Input((1,), name="targets")
sample_weight = keras.Input((1,), name="sample_weight")
preds = LogisticEndpoint()(logits, targets, sample_weight)
model = keras.Model([inputs, targets, sample_weight], preds)
data = {
    "inputs": np.random.random((100, 764)),
    "targets": np.random.random((100, 1)),
    "sample_weight": np.random.random((100, 1)),
}
model.compile(keras.optimizers.Adam(1e-3))
model.fit(data, epochs=2, verbose=0)
print("GUIDE OK")
