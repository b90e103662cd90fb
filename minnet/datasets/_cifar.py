"""The CIFAR binary release (records of label bytes + 3,072 pixel bytes), read from its tar.gz."""
import tarfile
import zlib

import numpy as np

from minnet import config

_PIXELS = 3 * 32 * 32


def read_records(archive_path, member_names, n_labels):
    """(images (n, 3, 32, 32) uint8, labels (n, n_labels) uint8) from the named members."""
    images, labels = [], []
    record = n_labels + _PIXELS
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            for name in member_names:
                try:
                    member = archive.getmember(name)
                except KeyError:
                    raise ValueError(f"{archive_path!r} has no member {name!r}: not the CIFAR "
                                     f"binary release.") from None
                if not member.isfile() or member.size == 0 or member.size % record:
                    raise ValueError(f"{archive_path!r}: member {name!r} is not a whole number "
                                     f"of {record}-byte records ({member.size} bytes).")
                data = np.frombuffer(archive.extractfile(member).read(), np.uint8)
                data = data.reshape(-1, record)
                labels.append(data[:, :n_labels])
                images.append(data[:, n_labels:].reshape(-1, 3, 32, 32))
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise ValueError(f"{archive_path!r} is not a readable tar.gz archive: {error}") from None
    return np.concatenate(images), np.concatenate(labels)


def to_layout(images):
    """NCHW records as the configured image layout (a new contiguous array)."""
    if config.image_data_format() == "channels_last":
        return np.ascontiguousarray(images.transpose(0, 2, 3, 1))
    return np.ascontiguousarray(images)
