"""TensorBoard event files written by hand: TFRecord framing and the few protobuf messages needed.

An event file is a sequence of records; each record is::

    uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)

where ``masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)`` with
``c = crc32c(b)`` (Castagnoli polynomial, reflected 0x82F63B78). ``data`` is a serialized
``tensorflow.Event`` protobuf. Only the fields TensorBoard reads for scalars, histograms and
text are encoded here (field numbers from tensorflow/core/util/event.proto and
tensorflow/core/framework/summary.proto)::

    Event:          wall_time=1 (double), step=2 (int64), file_version=3 (string), summary=5
    Summary:        value=1 (repeated Summary.Value)
    Summary.Value:  tag=1 (string), simple_value=2 (float), image=4 (Summary.Image),
                    histo=5 (HistogramProto), tensor=8 (TensorProto), metadata=9 (SummaryMetadata)
    Summary.Image:  height=1, width=2, colorspace=3 (int32), encoded_image_string=4 (a PNG)
    HistogramProto: min=1, max=2, num=3, sum=4, sum_squares=5 (double),
                    bucket_limit=6, bucket=7 (packed repeated double)
    SummaryMetadata: plugin_data=1 (PluginData: plugin_name=1, content=2)
    TensorProto:    dtype=1 (enum, DT_STRING=7), tensor_shape=2, string_val=8 (bytes)

Nothing here imports TensorFlow or TensorBoard.
"""
import os
import socket
import struct
import time
import zlib

import numpy as np

__all__ = ["crc32c", "masked_crc32c", "encode_event", "scalar_summary", "histogram_summary",
           "text_summary", "image_summary", "encode_png", "histogram_buckets", "EventFileWriter"]


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli) of ``data`` (bytes); ``crc32c(b"123456789") == 0xE3069283``."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """The CRC TFRecord stores: rotated right by 15 bits plus a constant (mod 2**32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value):
    value &= 0xFFFFFFFFFFFFFFFF  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _key(field, wire_type):
    return _varint((field << 3) | wire_type)


def _bytes_field(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _double_field(field, value):
    return _key(field, 1) + struct.pack("<d", float(value))


def _float_field(field, value):
    return _key(field, 5) + struct.pack("<f", float(value))


def _int_field(field, value):
    return _key(field, 0) + _varint(int(value))


def _packed_doubles(field, values):
    values = np.asarray(values, dtype="<f8")
    return _bytes_field(field, values.tobytes())


def _metadata(plugin_name, content=b""):
    plugin_data = _bytes_field(1, plugin_name.encode()) + (_bytes_field(2, content) if content else b"")
    return _bytes_field(9, _bytes_field(1, plugin_data))


def scalar_summary(tag, value):
    """A ``Summary.Value`` holding ``simple_value`` (what TensorBoard's scalar dashboard reads)."""
    return _bytes_field(1, tag.encode()) + _float_field(2, value)


def histogram_buckets(values, bins=30):
    """``(bucket_limit, bucket)`` for ``values``: ``bins`` equal-width buckets over [min, max].

    TensorBoard treats ``bucket[i]`` as the count in ``(bucket_limit[i-1], bucket_limit[i]]``;
    the first bucket's lower edge is the minimum.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        return np.zeros(0), np.zeros(0)
    low, high = float(values.min()), float(values.max())
    if low == high:
        return np.array([high]), np.array([float(values.size)])
    counts, edges = np.histogram(values, bins=bins, range=(low, high))
    return edges[1:], counts.astype(np.float64)


def histogram_summary(tag, values, bins=30):
    """A ``Summary.Value`` holding a ``HistogramProto`` of ``values`` (any shape)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    limits, counts = histogram_buckets(values, bins)
    if values.size:
        stats = (values.min(), values.max(), values.size, values.sum(), np.dot(values, values))
    else:
        stats = (0.0, 0.0, 0, 0.0, 0.0)
    histo = b"".join(_double_field(i + 1, s) for i, s in enumerate(stats))
    histo += _packed_doubles(6, limits) + _packed_doubles(7, counts)
    return _bytes_field(1, tag.encode()) + _bytes_field(5, histo)


def encode_png(pixels):
    """A PNG file (bytes) of uint8 ``pixels`` of shape (H, W) or (H, W, C), C in 1, 3, 4."""
    pixels = np.asarray(pixels, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, channels = pixels.shape
    color_type = {1: 0, 3: 2, 4: 6}[channels]

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    rows = b"".join(b"\x00" + pixels[r].tobytes() for r in range(height))   # filter 0 per row
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def image_summary(tag, pixels):
    """A ``Summary.Value`` holding a ``Summary.Image`` (height=1, width=2, colorspace=3,
    encoded_image_string=4: a PNG) of uint8 ``pixels`` (H, W) or (H, W, C)."""
    pixels = np.asarray(pixels, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, channels = pixels.shape
    image = (_int_field(1, height) + _int_field(2, width) + _int_field(3, channels)
             + _bytes_field(4, encode_png(pixels)))
    return _bytes_field(1, tag.encode()) + _bytes_field(4, image)


def text_summary(tag, text, plugin_name="text"):
    """A ``Summary.Value`` holding a scalar string tensor (the text plugin's format)."""
    shape = b""  # scalar: TensorShapeProto with no dims
    tensor = _int_field(1, 7) + _bytes_field(2, shape) + _bytes_field(8, text.encode())
    return _bytes_field(1, tag.encode()) + _metadata(plugin_name) + _bytes_field(8, tensor)


def encode_event(step=0, wall_time=None, summary_values=(), file_version=None):
    """A serialized ``Event``: a step, a wall time and either ``file_version`` or summary values."""
    wall_time = time.time() if wall_time is None else wall_time
    event = _double_field(1, wall_time) + _int_field(2, step)
    if file_version is not None:
        event += _bytes_field(3, file_version.encode())
    if summary_values:
        event += _bytes_field(5, b"".join(_bytes_field(1, v) for v in summary_values))
    return event


def frame_record(data):
    """One TFRecord: length, its masked CRC, the data, the data's masked CRC."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc32c(length)) + data
            + struct.pack("<I", masked_crc32c(data)))


class EventFileWriter:
    """Appends events to ``<log_dir>/events.out.tfevents.<time>.<host>.<pid>.<n>.v2``.

    The file is created on the first write (so a run that logs nothing to a folder leaves
    no file there), starts with the ``brain.Event:2`` version event, and is flushed after
    each write so TensorBoard sees the values while training runs.
    """

    _counter = 0

    def __init__(self, log_dir):
        self.log_dir = os.fspath(log_dir)
        self.path = None
        self._file = None

    def _open(self):
        os.makedirs(self.log_dir, exist_ok=True)
        EventFileWriter._counter += 1
        name = (f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}."
                f"{os.getpid()}.{EventFileWriter._counter}.v2")
        self.path = os.path.join(self.log_dir, name)
        self._file = open(self.path, "ab")
        self._file.write(frame_record(encode_event(0, file_version="brain.Event:2")))

    def write(self, step, summary_values, wall_time=None):
        """Write one event holding ``summary_values`` (from ``scalar_summary`` and friends)."""
        if self._file is None:
            self._open()
        self._file.write(frame_record(encode_event(step, wall_time, summary_values)))
        self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
        self._file = None
