"""Download-once, verify-always file cache for the data sets (no pickle anywhere).

Files live in ``$MINNET_HOME/datasets`` (default ``~/.minnet/datasets``). A download goes
to a temporary file beside its target, is checked against the published hash, and only
then renamed into place, so an interrupted or tampered download never enters the cache.
"""
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request

__all__ = ["cache_dir", "fetch", "file_hash"]

_CHUNK = 1 << 20


def cache_dir():
    """``$MINNET_HOME/datasets``, or ``~/.minnet/datasets`` when MINNET_HOME is unset."""
    home = os.environ.get("MINNET_HOME") or os.path.join(os.path.expanduser("~"), ".minnet")
    return os.path.join(home, "datasets")


def file_hash(path, algorithm):
    digest = hashlib.new(algorithm)
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path, algorithm, expected, origin):
    if expected is None:
        return
    actual = file_hash(path, algorithm)
    if actual != expected:
        raise ValueError(f"The file {path!r} does not match the published {algorithm.upper()} "
                         f"of {origin} (expected {expected}, found {actual}): it is damaged or "
                         f"not the right file. Delete it and download it again.")


def _progress(done, total, name, stream):
    if total:
        width = 30
        filled = int(width * done / total)
        stream.write(f"\r{name}: [{'=' * filled}{'.' * (width - filled)}] "
                     f"{done / 2**20:.1f}/{total / 2**20:.1f} MiB")
    else:
        stream.write(f"\r{name}: {done / 2**20:.1f} MiB")
    stream.flush()


def _download(origin, target, algorithm, expected, verbose):
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".download-", suffix=".tmp", dir=directory)
    name = os.path.basename(target)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(origin, timeout=60) as response:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
                done += len(chunk)
                if verbose:
                    _progress(done, total, name, sys.stderr)
        if verbose:
            sys.stderr.write("\n")
        _verify(temp, algorithm, expected, origin)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def download(origin, target, algorithm="sha256", expected=None, verbose=True):
    """Download ``origin`` to ``target`` atomically: a temporary file beside it, verified
    against ``expected`` (a hex digest, or None), then renamed into place."""
    _download(origin, target, algorithm, expected, verbose)


def fetch(name, origin, algorithm, expected, subdir, path=None, verbose=True):
    """The local path of a verified copy of ``origin``, downloading it on first use.

    Args:
        name: file name in the cache.
        origin: URL to download from.
        algorithm: ``"sha256"`` or ``"md5"`` (the one the publisher gives).
        expected: the published hex digest, or None where none is published.
        subdir: folder under the cache directory.
        path: an existing local copy to use instead (verified, never downloaded).
        verbose: show a progress bar while downloading.
    """
    if path is not None:
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            raise TypeError(f"Invalid value for argument `path`: expected None or a file path. "
                            f"Received: path={path!r}") from None
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Invalid value for argument `path`: no file at {path!r}. "
                                    f"Download {origin} and pass its path, or pass path=None to "
                                    f"download it into {os.path.join(cache_dir(), subdir)}.")
        _verify(path, algorithm, expected, origin)
        return path
    target = os.path.join(cache_dir(), subdir, name)
    if os.path.isfile(target):
        _verify(target, algorithm, expected, origin)
        return target
    try:
        _download(origin, target, algorithm, expected, verbose)
    except (urllib.error.URLError, OSError) as error:
        raise OSError(f"Could not download {origin} ({error}). Without a network, download it "
                      f"elsewhere and put it at {target!r} (the cache: $MINNET_HOME/datasets, "
                      f"default ~/.minnet/datasets), or pass its location as `path=`.") from error
    return target
