"""``SpectralNormalization`` (Miyato et al. 2018), Keras 3's wrapper: in training, each call
divides the wrapped layer's kernel by its largest singular value, estimated by power
iteration with a persistent vector ``vector_u``, then calls the layer.

The kernel is read as Keras's matrix ``(rows, out)``: Keras reshapes its own kernel layout
(``(in, out)`` Dense, ``(kh, kw, in, out)`` convolutions, ``(vocab, dim)`` embeddings) to
``(-1, out)``. minnet's kernels have PyTorch's layouts, so the matrix is built from them in
Keras's order (a Dense kernel transposed; a convolution kernel ``(F, C, *k)`` with F moved
last), and ``vector_u`` has Keras's shape ``(1, out)``: the same numbers as Keras::

    v = normalize(u Wᵀ);  u = normalize(v W)     (power_iterations times)
    sigma = v W uᵀ;   kernel = kernel / sigma    (in place; skipped while the kernel is all 0)
"""
import numpy as np

from minnet import _registry, initializers
from minnet._checks import check_int
from minnet.layers.simple import Wrapper

__all__ = ["SpectralNormalization"]


def _normalize(x):
    return x / max(float(np.sqrt(np.sum(x * x))), 1e-12)


class SpectralNormalization(Wrapper):
    """Spectral normalisation of a wrapped layer's ``kernel`` (or ``embeddings``).

    Args:
        layer: a ``Dense``, a convolution, an ``Embedding``, or any layer with ``kernel`` or
            ``embeddings``.
        power_iterations: power-iteration steps per training call (default 1, > 0).
    """

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        self.power_iterations = check_int("power_iterations", power_iterations, 1)

    def build(self, input_shape):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
        weight = getattr(self.layer, "kernel", None)
        if weight is None:
            weight = getattr(self.layer, "embeddings", None)
        if weight is None:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' "
                             f"nor 'embeddings'")
        self.kernel = weight
        self._layout = ("embedding" if weight is getattr(self.layer, "embeddings", None)
                        else "dense" if weight.ndim == 2 else "conv")
        out = self._matrix(weight.data).shape[1]
        self.vector_u = self.add_weight("vector_u", (1, out),
                                        initializer=initializers.TruncatedNormal(stddev=0.02),
                                        trainable=False)
        super().build(input_shape)

    def _matrix(self, kernel):
        """The kernel as Keras's ``(-1, out)`` matrix."""
        if self._layout == "embedding":
            return kernel
        if self._layout == "dense":
            return kernel.T
        return np.moveaxis(kernel, 0, -1).reshape(-1, kernel.shape[0])

    def call(self, x, training=False):
        if training and np.any(self.kernel.data != 0):
            w = self._matrix(self.kernel.data).astype(np.float64)
            u = self.vector_u.data.astype(np.float64)
            for _ in range(self.power_iterations):
                v = _normalize(u @ w.T)
                u = _normalize(v @ w)
            sigma = float((v @ w @ u.T).item())
            self.vector_u.data[...] = u
            self.kernel.data[...] = self.kernel.data / sigma
            bump = getattr(self.kernel, "_bump_version", None)
            if bump is not None:
                bump()
        return self.layer(x, training=training)

    def get_config(self):
        inner = {"class_name": _registry.registered_name("layer", type(self.layer))
                 or type(self.layer).__name__, "config": self.layer.get_config()}
        return {**super().get_config(), "layer": inner, "power_iterations": self.power_iterations}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        inner = config.pop("layer")
        if isinstance(inner, dict):
            inner = _registry.lookup("layer", inner["class_name"], custom_objects).from_config(
                inner.get("config", {}))
        return cls(inner, **config)
