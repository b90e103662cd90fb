"""Keras's utilities (``keras.utils``): ``to_categorical``, ``set_random_seed``, ``PyDataset``,
``unpack_x_y_sample_weight`` / ``pack_x_y_sample_weight``."""
from minnet.utils._general import (PyDataset, pack_x_y_sample_weight, set_random_seed, to_categorical,
                                   unpack_x_y_sample_weight)

__all__ = ["to_categorical", "set_random_seed", "PyDataset", "unpack_x_y_sample_weight",
           "pack_x_y_sample_weight"]
