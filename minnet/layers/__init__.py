"""minnet's layers (Keras-style, both image layouts) and their serialization registry.

``serialize(layer)`` gives ``{"class_name": ..., "config": ...}`` (JSON-able, no pickle);
``deserialize(d, custom_objects=None)`` re-creates the layer.  Built-in layers are
registered by class name; a custom layer (or a function used by a ``Lambda`` layer) is
registered with the ``register_layer`` decorator::

    @mn.register_layer
    class Scale(mn.layers.Layer):
        ...

    @mn.register_layer("my_package>Scale")   # or under an explicit name
    class Scale(mn.layers.Layer):
        ...
"""
import inspect

from minnet import _registry

from minnet.layers.base import Layer
from minnet.layers.core import Activation, Dense, Flatten, Input, InputLayer, Lambda, Reshape
from minnet.layers.merging import (Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract,
                                  TensorOperation)
from minnet.layers.merging import add, average, concatenate, maximum, minimum, multiply, subtract
from minnet.layers.convolutional import Conv2D
from minnet.layers.convolutional_variants import Conv2DTranspose, DepthwiseConv2D, SeparableConv2D
from minnet.layers.pooling import AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D
from minnet.layers.pooling import GlobalMaxPooling2D
from minnet.layers.normalization import BatchNormalization
from minnet.layers.regularization import AlphaDropout, Dropout, SpatialDropout2D
from minnet.layers.activation import ELU, LeakyReLU, ReLU, SELU, Sigmoid, Softmax, Tanh
from minnet.layers.activation import PReLU
from minnet.layers.reshaping import Cropping2D, Permute, RepeatVector, UpSampling2D, ZeroPadding2D
from minnet.layers.normalization_extra import GroupNormalization, LayerNormalization
from minnet.layers.noise import GaussianDropout, GaussianNoise
from minnet.layers.preprocessing import (CenterCrop, Normalization, RandomContrast, RandomCrop,
                                         RandomFlip, RandomRotation, RandomTranslation,
                                         RandomZoom, Rescaling, Resizing)
from minnet.layers.embedding import Embedding, Masking
from minnet.layers.recurrent import GRU, LSTM, Bidirectional, SimpleRNN, TimeDistributed
from minnet.layers.convolutional1d import (AveragePooling1D, Conv1D, GlobalAveragePooling1D,
                                           GlobalMaxPooling1D, MaxPooling1D)
from minnet.layers.text_vectorization import TextVectorization
from minnet.layers.attention import AdditiveAttention, Attention, MultiHeadAttention
from minnet.layers.simple import (ActivityRegularization, Dot, GlobalAveragePooling3D,
                                  GlobalMaxPooling3D, Identity, Pipeline, RMSNormalization,
                                  SpatialDropout1D, SpatialDropout3D, UnitNormalization, Wrapper,
                                  dot)
from minnet.layers.reshaping_nd import (Cropping1D, Cropping3D, UpSampling1D, UpSampling3D,
                                        ZeroPadding1D, ZeroPadding3D)
from minnet.layers.dense_conv_extra import (AdaptiveAveragePooling1D, AdaptiveAveragePooling2D,
                                            AdaptiveAveragePooling3D, AdaptiveMaxPooling1D,
                                            AdaptiveMaxPooling2D, AdaptiveMaxPooling3D,
                                            Conv1DTranspose, EinsumDense)
from minnet.layers.categorical import CategoryEncoding, Discretization, IntegerLookup, StringLookup
from minnet.layers.rnn_cells import RNN, GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from minnet.layers.pooling3d import AveragePooling3D, MaxPooling3D
from minnet.layers.convolutional3d import Conv3D, Conv3DTranspose
from minnet.layers.convolutional1d_variants import DepthwiseConv1D, SeparableConv1D
from minnet.layers.grouped_query_attention import GroupQueryAttention
from minnet.layers.reversible_embedding import ReversibleEmbedding
from minnet.layers.spectral_normalization import SpectralNormalization
from minnet.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from minnet.layers.input_spec import InputSpec
from minnet.layers.audio import MelSpectrogram, STFTSpectrogram

__all__ = [
    "Layer", "Input", "Dense", "Flatten", "Reshape", "Lambda", "Activation", "Conv2D",
    "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "BatchNormalization",
    "Dropout", "AlphaDropout", "SpatialDropout2D", "ReLU", "LeakyReLU", "ELU", "SELU",
    "Sigmoid", "Tanh", "Softmax", "InputLayer", "Add", "Subtract", "Multiply", "Average", "Maximum",
    "Minimum", "Concatenate", "TensorOperation", "serialize", "deserialize", "register_layer", "get",
]
__all__ += ["GlobalMaxPooling2D"]
__all__ += ["add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]
__all__ += ["PReLU", "UpSampling2D", "ZeroPadding2D", "Cropping2D", "Permute", "RepeatVector",
            "LayerNormalization", "GroupNormalization", "GaussianNoise", "GaussianDropout",
            "Rescaling", "Normalization", "Resizing", "CenterCrop", "RandomFlip",
            "RandomTranslation", "RandomRotation", "RandomZoom", "RandomCrop", "RandomContrast"]
_SEQUENCE_LAYERS = (Embedding, Masking, SimpleRNN, LSTM, GRU, Bidirectional, TimeDistributed,
                    Conv1D, MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D,
                    GlobalAveragePooling1D, TextVectorization)
__all__ += [cls.__name__ for cls in _SEQUENCE_LAYERS]
__all__ += ["MultiHeadAttention", "Attention", "AdditiveAttention"]

_BUILTINS = (Dense, Flatten, Reshape, Lambda, Activation, Conv2D, MaxPooling2D,
             AveragePooling2D, GlobalAveragePooling2D, BatchNormalization, Dropout,
             AlphaDropout, SpatialDropout2D, ReLU, LeakyReLU, ELU, SELU, Sigmoid, Tanh, Softmax,
             Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, TensorOperation)
_BUILTINS += (GlobalMaxPooling2D,)

_BUILTINS += (PReLU, UpSampling2D, ZeroPadding2D, Cropping2D, Permute, RepeatVector,
              LayerNormalization, GroupNormalization, GaussianNoise, GaussianDropout,
              Rescaling, Normalization, Resizing, CenterCrop, RandomFlip, RandomTranslation,
              RandomRotation, RandomZoom, RandomCrop, RandomContrast)
_BUILTINS = _BUILTINS + _SEQUENCE_LAYERS + (Conv2DTranspose, DepthwiseConv2D, SeparableConv2D)
__all__ += ["Conv2DTranspose", "DepthwiseConv2D", "SeparableConv2D"]
_BUILTINS += (MultiHeadAttention, Attention, AdditiveAttention)
_ISSUE_28 = (Identity, ActivityRegularization, UnitNormalization, RMSNormalization, Dot,
             SpatialDropout1D, SpatialDropout3D, UpSampling1D, UpSampling3D, ZeroPadding1D,
             ZeroPadding3D, Cropping1D, Cropping3D, AdaptiveAveragePooling1D,
             AdaptiveAveragePooling2D, AdaptiveAveragePooling3D, AdaptiveMaxPooling1D,
             AdaptiveMaxPooling2D, AdaptiveMaxPooling3D, Conv1DTranspose, EinsumDense,
             CategoryEncoding, Discretization, StringLookup, IntegerLookup, RNN, SimpleRNNCell,
             LSTMCell, GRUCell, StackedRNNCells, GlobalAveragePooling3D, GlobalMaxPooling3D,
             Pipeline, Wrapper, MaxPooling3D, AveragePooling3D)
_BUILTINS += _ISSUE_28
__all__ += [cls.__name__ for cls in _ISSUE_28]
# Keras's other spellings of the same classes (issue 28)
MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = MaxPooling1D, MaxPooling2D, AveragePooling1D, \
    AveragePooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
Convolution1D, Convolution2D, Convolution1DTranspose = Conv1D, Conv2D, Conv1DTranspose
Convolution2DTranspose, SeparableConvolution2D = Conv2DTranspose, SeparableConv2D
__all__ += ["MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D", "GlobalAvgPool1D",
            "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "Convolution1D",
            "Convolution2D", "Convolution1DTranspose", "Convolution2DTranspose",
            "SeparableConvolution2D", "GlobalAvgPool3D", "GlobalMaxPool3D", "dot"]
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
__all__ += ["MaxPool3D", "AvgPool3D"]
_BUILTINS += (Conv3D, Conv3DTranspose, DepthwiseConv1D, SeparableConv1D, GroupQueryAttention,
              ReversibleEmbedding, SpectralNormalization, ConvLSTM1D, ConvLSTM2D, ConvLSTM3D)
Convolution3D, Convolution3DTranspose = Conv3D, Conv3DTranspose
SeparableConvolution1D = SeparableConv1D
__all__ += ["Conv3D", "Conv3DTranspose", "Convolution3D", "Convolution3DTranspose",
            "DepthwiseConv1D", "SeparableConv1D", "SeparableConvolution1D", "GroupQueryAttention",
            "ReversibleEmbedding", "SpectralNormalization", "ConvLSTM1D", "ConvLSTM2D",
            "ConvLSTM3D", "InputSpec"]
_BUILTINS += (STFTSpectrogram, MelSpectrogram)
__all__ += ["STFTSpectrogram", "MelSpectrogram"]
# The one registry (minnet/_registry.py): built-ins under their class names and Keras's other
# spellings; register_layer adds custom layers and Lambda functions; Sequential and Model
# register themselves when minnet.models loads.
for _cls in _BUILTINS:
    _registry.register("layer", _cls)
_registry.register("layer", InputLayer, name="Input", aliases=("InputLayer",))  # files say "Input"
for _alias, _cls in {"MaxPool2D": MaxPooling2D, "AvgPool2D": AveragePooling2D,
                     "AveragePool2D": AveragePooling2D, "GlobalAvgPool2D": GlobalAveragePooling2D,
                     "GlobalMaxPool2D": GlobalMaxPooling2D, "Convolution2D": Conv2D,
                     "BatchNorm": BatchNormalization, "MaxPool1D": MaxPooling1D,
                     "AvgPool1D": AveragePooling1D, "GlobalAvgPool1D": GlobalAveragePooling1D,
                     "GlobalMaxPool1D": GlobalMaxPooling1D, "Convolution1D": Conv1D,
                     "Convolution1DTranspose": Conv1DTranspose,
                     "Convolution2DTranspose": Conv2DTranspose,
                     "SeparableConvolution2D": SeparableConv2D,
                     "GlobalAvgPool3D": GlobalAveragePooling3D,
                     "GlobalMaxPool3D": GlobalMaxPooling3D, "MaxPool3D": MaxPooling3D,
                     "AvgPool3D": AveragePooling3D, "Convolution3D": Conv3D,
                     "Convolution3DTranspose": Conv3DTranspose,
                     "SeparableConvolution1D": SeparableConv1D}.items():
    _registry.register("layer", _cls, name=_cls.__name__, aliases=(_alias,))


def register_layer(cls_or_name=None):
    """Register a custom layer class (or a function for ``Lambda``) so that saved models load.

    Use as ``@register_layer`` (registered under the class/function name) or
    ``@register_layer("Name")``.

    Args:
        cls_or_name: the class/function to register, or the name to register it under.

    Returns:
        The class/function unchanged (or a decorator when given a name).

    Raises:
        ValueError: a different object is already registered under that name.
    """
    def _register(obj, name):
        if not (isinstance(obj, type) and issubclass(obj, Layer)) and not callable(obj):
            raise TypeError(f"Invalid value for argument `cls_or_name`: expected a Layer subclass "
                            f"or a function. Received: {obj!r}")
        return _registry.register("layer", obj, name=name)

    if cls_or_name is None:
        return lambda obj: _register(obj, obj.__name__)
    if isinstance(cls_or_name, str):
        name = cls_or_name
        return lambda obj: _register(obj, name)
    return _register(cls_or_name, cls_or_name.__name__)


def _resolve_class(name, custom_objects):
    cls = _registry.lookup("layer", name, custom_objects)
    if not (isinstance(cls, type) and issubclass(cls, Layer)):
        raise ValueError(f"Unknown layer class {name!r}: it is registered as a function (for a "
                         f"Lambda layer), not a Layer subclass.")
    return cls


def serialize(layer):
    """``{"class_name": <registered name>, "config": layer.get_config()}``.

    Raises:
        TypeError: ``layer`` is not a Layer.
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"Invalid value for argument `layer`: expected a minnet Layer. "
                        f"Received: {type(layer).__name__}")
    name = _registry.registered_name("layer", type(layer)) or type(layer).__name__
    entry = {"class_name": name, "config": layer.get_config()}
    if layer.built and not getattr(type(layer).build_from_config, "keras_default", False):
        # a layer whose build takes more than the shape: its own build state, which
        # deserialize hands back to its build_from_config (Keras's rule)
        entry["build_config"] = layer.get_build_config()
    return entry


def deserialize(config, custom_objects=None):
    """Re-create a layer from ``serialize``'s output.

    Args:
        config: ``{"class_name": ..., "config": {...}}``.
        custom_objects: optional dict name -> class/function for custom layers and for the
            functions of ``Lambda`` layers.

    Returns:
        A new (unbuilt) layer.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Invalid value for argument `config`: expected a dict with keys "
                         f"'class_name' and 'config'. Received: config={config!r}")
    cls = _resolve_class(config["class_name"], custom_objects)
    inner = dict(config.get("config") or {})
    from_config = cls.from_config
    if "custom_objects" in inspect.signature(from_config).parameters:
        layer = from_config(inner, custom_objects=custom_objects)
    else:
        layer = from_config(inner)
    build_config = config.get("build_config")
    if build_config and not getattr(type(layer).build_from_config, "keras_default", False):
        # a layer whose build needs more than the shape builds itself, as Keras does on loading
        layer.build_from_config(build_config)
    return layer


def get(identifier, custom_objects=None):
    """A Layer instance from a Layer (returned as is) or a serialized dict."""
    if isinstance(identifier, Layer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    raise TypeError(f"Invalid value for argument `identifier`: expected a Layer or a dict from "
                    f"serialize(). Received: {identifier!r}")
# Keras 3's image augmentation layers (issue 28)
from minnet.layers.augmentation_color import (  # noqa: E402
    AutoContrast, ContrastLimitedAdaptiveHistogramEqualization, Equalization, RandomBrightness,
    RandomColorDegeneration, RandomColorJitter, RandomGrayscale, RandomHue, RandomInvert,
    RandomPosterization, RandomSaturation, RandomSharpness, Solarization)
from minnet.layers.augmentation_mix import (  # noqa: E402
    CutMix, MaxNumBoundingBoxes, MixUp, RandomElasticTransform, RandomErasing,
    RandomGaussianBlur, RandomPerspective, RandomShear)
from minnet.layers.augmentation_policy import AugMix, RandAugment  # noqa: E402
_AUGMENTATION = (RandomBrightness, RandomGrayscale, RandomInvert, RandomSaturation, RandomHue,
                 RandomColorDegeneration, RandomColorJitter, Solarization, RandomPosterization,
                 AutoContrast, Equalization, RandomSharpness, MixUp, CutMix, RandomErasing,
                 RandomGaussianBlur, RandomShear, RandAugment, RandomPerspective, AugMix,
                 RandomElasticTransform, ContrastLimitedAdaptiveHistogramEqualization,
                 MaxNumBoundingBoxes)
for _cls in _AUGMENTATION:
    _registry.register("layer", _cls)
__all__ += [cls.__name__ for cls in _AUGMENTATION]
