# Modelled on keras-io guides/working_with_rnns.py (commit ad4fc805f5e1a4a4c0bcdd416aa9feac6608fb6c).
# Written here against the public Keras 3 API, following the guide's sections in order (the
# guide's own text is not copied); changed: MNIST replaced by random arrays, sizes small; the
# nested-input custom cell section left out.
import numpy as np
import keras
from keras import layers

model = keras.Sequential()
model.add(layers.Embedding(input_dim=1000, output_dim=64))
model.add(layers.LSTM(128))
model.add(layers.Dense(10))
model.summary()

model = keras.Sequential()
model.add(layers.Embedding(input_dim=1000, output_dim=64))
model.add(layers.GRU(256, return_sequences=True))
model.add(layers.SimpleRNN(128))
model.add(layers.Dense(10))
y = model(np.random.randint(0, 1000, size=(2, 7)))
assert tuple(y.shape) == (2, 10)

encoder_vocab = 1000
decoder_vocab = 2000
encoder_input = layers.Input(shape=(None,))
encoder_embedded = layers.Embedding(input_dim=encoder_vocab, output_dim=64)(encoder_input)
output, state_h, state_c = layers.LSTM(64, return_state=True, name="encoder")(encoder_embedded)
encoder_state = [state_h, state_c]
decoder_input = layers.Input(shape=(None,))
decoder_embedded = layers.Embedding(input_dim=decoder_vocab, output_dim=64)(decoder_input)
decoder_output = layers.LSTM(64, name="decoder")(decoder_embedded, initial_state=encoder_state)
output = layers.Dense(10)(decoder_output)
model = keras.Model([encoder_input, decoder_input], output)
model.summary()
y = model([np.random.randint(0, 1000, (2, 5)), np.random.randint(0, 2000, (2, 6))])
assert tuple(y.shape) == (2, 10)

paragraph1 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph2 = np.random.random((20, 10, 50)).astype(np.float32)
paragraph3 = np.random.random((20, 10, 50)).astype(np.float32)
lstm_layer = layers.LSTM(64, stateful=True)
output = lstm_layer(paragraph1)
output = lstm_layer(paragraph2)
output = lstm_layer(paragraph3)
lstm_layer.reset_states()

lstm_layer = layers.LSTM(64, stateful=True)
output = lstm_layer(paragraph1)
output = lstm_layer(paragraph2)
existing_state = lstm_layer.states
new_lstm_layer = layers.LSTM(64)
new_output = new_lstm_layer(paragraph3, initial_state=existing_state)

model = keras.Sequential()
model.add(layers.Input(shape=(5, 10)))
model.add(layers.Bidirectional(layers.LSTM(64, return_sequences=True)))
model.add(layers.Bidirectional(layers.LSTM(32)))
model.add(layers.Dense(10))
model.summary()
assert tuple(model.output_shape) == (None, 10)

batch_size = 64
input_dim = 28
units = 64
output_size = 10


def build_model(allow_cudnn_kernel=True):
    if allow_cudnn_kernel:
        lstm_layer = keras.layers.LSTM(units, input_shape=(None, input_dim))
    else:
        lstm_layer = keras.layers.RNN(keras.layers.LSTMCell(units), input_shape=(None, input_dim))
    model = keras.models.Sequential([lstm_layer, keras.layers.BatchNormalization(),
                                     keras.layers.Dense(output_size)])
    return model


rng = np.random.default_rng(0)
x_train = rng.random((64, 28, 28)).astype("float32")
y_train = rng.integers(0, 10, 64)
x_test, y_test = x_train[:32], y_train[:32]
model = build_model(allow_cudnn_kernel=True)
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer="sgd",
              metrics=["accuracy"])
model.fit(x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size, epochs=1, verbose=0)
noncudnn_model = build_model(allow_cudnn_kernel=False)
noncudnn_model.set_weights(model.get_weights())
noncudnn_model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       optimizer="sgd", metrics=["accuracy"])
noncudnn_model.fit(x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size, epochs=1,
                   verbose=0)
result = model.predict(x_test[:1], verbose=0)
assert result.shape == (1, 10)
print("GUIDE OK")
