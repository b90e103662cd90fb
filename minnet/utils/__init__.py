"""Keras's utilities (``keras.utils``): data-set splitting, ``normalize``,
``image_dataset_from_directory``."""
from minnet.utils._dataset_utils import (ImageDataset, image_dataset_from_directory, normalize,
                                         split_dataset, train_test_split)

__all__ = ["split_dataset", "train_test_split", "normalize", "image_dataset_from_directory",
           "ImageDataset"]
