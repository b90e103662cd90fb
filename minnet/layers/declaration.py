"""Keras's declaration keywords on a layer (``input_shape``, ``batch_size``,
``batch_input_shape``, ``input_dim``): the batch shape they declare, checked."""
import numpy as np

__all__ = ["check_sample_shape", "declared_batch_shape"]


def check_sample_shape(name, value):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),)
    if not isinstance(value, (tuple, list)) or not all(
            s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s > 0)
            for s in value):
        raise ValueError(f"Invalid value for argument `{name}`: expected a tuple of positive ints "
                         f"(or None). Received: {name}={value!r}")
    return tuple(None if s is None else int(s) for s in value)


def declared_batch_shape(input_shape=None, batch_size=None, batch_input_shape=None,
                          input_dim=None):
    """Keras's rule: ``batch_input_shape`` wins; else ``(batch_size, *input_shape)``;
    ``input_dim=n`` means ``input_shape=(n,)``. None when nothing was declared."""
    if batch_input_shape is not None:
        if input_shape is not None or input_dim is not None:
            raise ValueError("Give either `batch_input_shape` or `input_shape`/`input_dim`, not "
                             f"both. Received: batch_input_shape={batch_input_shape!r}, "
                             f"input_shape={input_shape!r}, input_dim={input_dim!r}")
        shape = check_sample_shape("batch_input_shape", batch_input_shape)
        if not shape:
            raise ValueError("Invalid value for argument `batch_input_shape`: expected a tuple "
                             "that includes the batch dimension. Received: batch_input_shape=()")
        return shape
    if input_dim is not None:
        if input_shape is not None:
            raise ValueError("Give either `input_shape` or `input_dim`, not both. Received: "
                             f"input_shape={input_shape!r}, input_dim={input_dim!r}")
        if isinstance(input_dim, bool) or not isinstance(input_dim, (int, np.integer)) or input_dim <= 0:
            raise ValueError("Invalid value for argument `input_dim`: expected a positive int. "
                             f"Received: input_dim={input_dim!r}")
        input_shape = (int(input_dim),)
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
            batch_size, (int, np.integer)) or batch_size <= 0):
        raise ValueError("Invalid value for argument `batch_size`: expected a positive int. "
                         f"Received: batch_size={batch_size!r}")
    if input_shape is None:
        if batch_size is not None:
            raise ValueError("`batch_size` needs `input_shape` (Keras declares the batch size "
                             f"together with the sample shape). Received: batch_size={batch_size!r}")
        return None
    sample = check_sample_shape("input_shape", input_shape)
    return (None if batch_size is None else int(batch_size),) + sample
