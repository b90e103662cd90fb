"""RemoteMonitor (issue 28): the request Keras sends, to a local HTTP server; no server: a warning."""
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

import minnet as mn
from minnet import callbacks


@pytest.fixture
def server():
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers.get("Content-Type"),
                             self.headers.get("X-Run"), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}", received
    httpd.shutdown()
    httpd.server_close()


def _fit(cb, epochs=2):
    model = mn.Sequential([mn.layers.Input((3,)), mn.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    model.fit(np.ones((8, 3), "float32"), np.zeros((8, 1), "float32"), epochs=epochs,
              verbose=0, callbacks=[cb])


def test_form_and_json_bodies(server):
    root, received = server
    _fit(callbacks.RemoteMonitor(root=root, headers={"X-Run": "7"}))
    assert [r[0] for r in received] == ["/publish/epoch/end/"] * 2
    path, kind, run, body = received[1]
    assert kind == "application/x-www-form-urlencoded" and run == "7"
    sent = json.loads(urllib.parse.parse_qs(body.decode())["data"][0])
    assert sent["epoch"] == 1 and set(sent) == {"epoch", "loss", "mae"}
    received.clear()
    _fit(callbacks.RemoteMonitor(root=root, path="/x", send_as_json=True), epochs=1)
    path, kind, _, body = received[0]
    assert path == "/x" and kind == "application/json" and json.loads(body)["epoch"] == 0


def test_no_server_warns():
    with pytest.warns(UserWarning, match="Could not reach RemoteMonitor"):
        _fit(callbacks.RemoteMonitor(root="http://127.0.0.1:9", timeout=2), epochs=1)
    with pytest.raises(TypeError, match="`headers`"):
        callbacks.RemoteMonitor(headers=["a"])
