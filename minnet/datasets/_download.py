"""Download-once, verify-always file cache for the data sets (no pickle anywhere).

Files live in ``$MINNET_HOME/datasets`` (default ``~/.minnet/datasets``). A download goes
to a temporary file beside its target, is checked against the published hash, and only
then renamed into place, so an interrupted or tampered download never enters the cache.

Every file a loader accepts from the cache also gets its SHA-256 recorded in the folder's
``SHA256SUMS`` (``sha256sum`` format) the first time; later loads check the published hash
and that record, so a cached file that changed after it was accepted is refused by name even
where the publisher gives only an MD5.
"""
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request

from minnet._checks import check_labels

__all__ = ["cache_dir", "fetch", "file_hash", "check_file_labels", "MANIFEST"]

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


MANIFEST = "SHA256SUMS"


def _manifest(directory):
    """``{file name: sha256}`` recorded in ``directory``'s SHA256SUMS (empty when none)."""
    recorded = {}
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as file:
            for line in file:
                digest, _, name = line.rstrip("\n").partition("  ")
                if len(digest) == 64 and name:
                    recorded[name] = digest
    except (OSError, UnicodeDecodeError):
        pass
    return recorded


def _record(path, digest):
    """Add ``path``'s SHA-256 to its folder's SHA256SUMS (rewritten atomically)."""
    directory, name = os.path.split(path)
    recorded = _manifest(directory)
    recorded[name] = digest
    fd, temp = tempfile.mkstemp(prefix=".sha256sums-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.writelines(f"{d}  {n}\n" for n, d in sorted(recorded.items()))
        os.replace(temp, os.path.join(directory, MANIFEST))
    except OSError:              # a read-only cache: the published hash still guards it
        try:
            os.unlink(temp)
        except OSError:
            pass


def _accept_cached(path, algorithm, expected, origin):
    """Check a cached file against the published hash and its recorded SHA-256; record it."""
    _verify(path, algorithm, expected, origin)
    digest = expected if algorithm == "sha256" and expected is not None else file_hash(path, "sha256")
    recorded = _manifest(os.path.dirname(path)).get(os.path.basename(path))
    if recorded is None:
        _record(path, digest)
    elif recorded != digest:
        raise ValueError(f"The file {path!r} changed after minnet accepted it: its SHA-256 is "
                         f"{digest}, the one recorded in {MANIFEST} beside it is {recorded}. Delete "
                         f"the file (and its line in {MANIFEST}) and download it again.")


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
        _accept_cached(target, algorithm, expected, origin)
        return target
    try:
        _download(origin, target, algorithm, expected, verbose)
    except (urllib.error.URLError, OSError) as error:
        raise OSError(f"Could not download {origin} ({error}). Without a network, download it "
                      f"elsewhere and put it at {target!r} (the cache: $MINNET_HOME/datasets, "
                      f"default ~/.minnet/datasets), or pass its location as `path=`.") from error
    _accept_cached(target, algorithm, expected, origin)
    return target


def check_file_labels(labels, n_classes, path, part):
    """Labels read from ``path`` are integers in ``[0, n_classes)`` (the loader's documented
    range): the shared ``_checks.check_labels`` scan, its error prefixed with the file."""
    if labels.dtype.kind not in "iu":
        raise ValueError(f"{path!r} is damaged or not the right data set: the {part} labels have "
                         f"dtype {labels.dtype}; expected integers in [0, {n_classes}).")
    try:
        check_labels(f"{part} labels", labels, n_classes)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path!r} is damaged or not the right data set (delete it and download "
                         f"it again): {error}") from None
