"""Turn a Keras 3 script into a minnet script by changing its import lines only.

``import keras`` -> ``import minnet as keras``; ``from keras import x`` -> ``from minnet import x``;
``from keras.a.b import x`` -> ``from minnet.a.b import x``; ``from torch import no_grad`` (the
torch backend's guides update weights under it) -> ``from minnet import no_grad``. Nothing else
in the script changes:
that is the contract of issue #13 ("a Keras tutorial runs unchanged").
"""
import re

_IMPORT = re.compile(r"^(\s*)import keras(\s*(#.*)?)$", re.M)
_FROM = re.compile(r"^(\s*)from keras((?:\.\w+)*) import ", re.M)
_NO_GRAD = re.compile(r"^(\s*)from torch import no_grad(\s*(#.*)?)$", re.M)


def to_minnet(source):
    """The script with its keras imports pointed at minnet."""
    source = _IMPORT.sub(r"\1import minnet as keras\2", source)
    source = _NO_GRAD.sub(r"\1from minnet import no_grad\2", source)
    return _FROM.sub(r"\1from minnet\2 import ", source)
