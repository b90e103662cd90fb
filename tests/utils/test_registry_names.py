"""Default names follow Keras's ``to_snake_case`` (acronyms included)."""
import pytest

from minnet._registry import snake_case

CASES = {
    "Conv2D": "conv2d", "GRUCell": "gru_cell", "LSTM": "lstm", "PReLU": "p_re_lu",
    "ReLU": "re_lu", "MaxPooling2D": "max_pooling2d", "SimpleRNNCell": "simple_rnn_cell",
    "MeanIoU": "mean_io_u", "STFTSpectrogram": "stft_spectrogram", "RMSprop": "rm_sprop",
    "Conv2DTranspose": "conv2d_transpose", "BatchNormalization": "batch_normalization",
    "ConvLSTM2D": "conv_lstm2d", "AUC": "auc",
}


@pytest.mark.parametrize("class_name", sorted(CASES))
def test_snake_case_matches_keras_table(class_name):
    assert snake_case(class_name) == CASES[class_name]


@pytest.mark.parametrize("class_name", sorted(CASES))
def test_snake_case_matches_keras(class_name, keras):
    from keras.src.utils import naming
    assert snake_case(class_name) == naming.to_snake_case(class_name)
