"""Keras's utilities (``keras.utils``): ``to_categorical``, ``set_random_seed``, ``PyDataset``,
``unpack_x_y_sample_weight`` / ``pack_x_y_sample_weight``, data-set splitting, ``normalize``,
``image_dataset_from_directory``, ``pad_sequences``."""
from minnet.utils._dataset_utils import (ImageDataset, image_dataset_from_directory, normalize,
                                         split_dataset, train_test_split)
from minnet.utils._sequence import pad_sequences
from minnet.utils._general import (PyDataset, clear_session, pack_x_y_sample_weight, set_random_seed,
                                   to_categorical, unpack_x_y_sample_weight)

from minnet._registry import CustomObjectScope, custom_object_scope, get_custom_objects

__all__ = ["CustomObjectScope", "custom_object_scope", "get_custom_objects", "to_categorical", "set_random_seed", "PyDataset", "unpack_x_y_sample_weight",
           "pack_x_y_sample_weight", "split_dataset", "train_test_split", "normalize",
           "image_dataset_from_directory", "ImageDataset", "pad_sequences", "clear_session"]

# Keras's file, image, data-set and drawing utilities (issue #32).
from minnet.utils._file_utils import get_file  # noqa: E402
from minnet.utils._image_utils import array_to_img, img_to_array, load_img, save_img  # noqa: E402
from minnet.utils._plot_model import plot_model  # noqa: E402
from minnet.utils._progbar import Progbar  # noqa: E402
from minnet.utils._series_and_text import (text_dataset_from_directory,  # noqa: E402
                                           timeseries_dataset_from_array)

__all__ += ["get_file", "load_img", "img_to_array", "array_to_img", "save_img", "plot_model",
            "Progbar", "timeseries_dataset_from_array", "text_dataset_from_directory"]
