"""``RemoteMonitor``, Keras 3's: POST each epoch's logs to an HTTP server (a dashboard).

Keras uses the ``requests`` package; minnet sends the same request with the standard
library (``urllib.request``), so nothing extra is installed: the body is the form field
``field=<json of {"epoch": ..., **logs}>`` (``application/x-www-form-urlencoded``), or the
JSON itself with ``send_as_json=True``. An unreachable server gives a warning, not an error,
as Keras. Rank 0 only under data parallelism.
"""
import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from minnet.callbacks.callback import Callback

__all__ = ["RemoteMonitor"]


class RemoteMonitor(Callback):
    """Send ``{"epoch": epoch, **logs}`` to ``root + path`` at the end of every epoch.

    Args:
        root: the server's URL (default ``"http://localhost:9000"``).
        path: the path the request goes to (default ``"/publish/epoch/end/"``).
        field: the form field holding the JSON (default ``"data"``).
        headers: extra HTTP headers (a dict) or None.
        send_as_json: send the JSON as the request body (``application/json``).
    """

    chief_only = True          # data parallelism: rank 0 only

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False, timeout=10.0):
        super().__init__()
        for name, value in (("root", root), ("path", path), ("field", field)):
            if not isinstance(value, str):
                raise TypeError(f"Invalid value for argument `{name}`: expected a str. "
                                f"Received: {name}={value!r}")
        if headers is not None and not isinstance(headers, dict):
            raise TypeError(f"Invalid value for argument `headers`: expected a dict or None. "
                            f"Received: headers={headers!r}")
        self.root, self.path, self.field = root, path, field
        self.headers = headers
        self.send_as_json = bool(send_as_json)
        self.timeout = float(timeout)

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for key, value in (logs or {}).items():
            send[key] = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        if self.send_as_json:
            body = json.dumps(send).encode()
            kind = "application/json"
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            kind = "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.root + self.path, data=body, method="POST",
                                         headers={"Content-Type": kind, **(self.headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}",
                          stacklevel=2)
