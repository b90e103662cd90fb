"""``get_file``: Keras's download-and-cache helper, on minnet's verified download.

Files go to ``<cache_dir>/<cache_subdir>/<fname>``; ``cache_dir`` defaults to
``$MINNET_HOME`` (``~/.minnet``). A download is written to a temporary file beside its target,
checked against ``file_hash`` (SHA-256, or MD5 for a 32-digit hash), and only then renamed
into place (``minnet.datasets._download``). Archives (``extract=True``) are unpacked with
every member checked first: an absolute name, a ``..`` that climbs out of the target, or a
link pointing outside it refuses the whole archive before anything is written.
"""
import hashlib
import os
import tarfile
import urllib.parse
import zipfile

from minnet.datasets import _download

__all__ = ["get_file", "hash_file", "validate_file", "extract_archive"]


def _resolve_algorithm(algorithm, file_hash):
    if algorithm in ("sha256", "md5"):
        return algorithm
    if algorithm != "auto":
        raise ValueError("Invalid value for argument `hash_algorithm`: expected 'auto', 'sha256' "
                         f"or 'md5'. Received: hash_algorithm={algorithm!r}")
    return "md5" if file_hash is not None and len(file_hash) == 32 else "sha256"


def hash_file(fpath, algorithm="sha256", chunk_size=65535):
    """The hex digest of a file (``"sha256"``, ``"md5"`` or ``"auto"`` = sha256)."""
    algorithm = "sha256" if algorithm == "auto" else algorithm
    digest = hashlib.new(algorithm)
    with open(fpath, "rb") as file:
        for chunk in iter(lambda: file.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535):
    """Whether the file's hash is ``file_hash``."""
    return hash_file(fpath, _resolve_algorithm(algorithm, file_hash), chunk_size) == str(file_hash)


def _inside(root, name):
    target = os.path.realpath(os.path.join(root, name))
    root = os.path.realpath(root)
    return target == root or target.startswith(root + os.sep)


def _check_members(root, names_and_links, archive):
    for name, link in names_and_links:
        if os.path.isabs(name) or name.startswith(("/", "\\")) or not _inside(root, name):
            raise ValueError(f"Refusing to extract {archive!r}: the member {name!r} would be "
                             f"written outside {root!r}.")
        if link is not None:
            base = os.path.dirname(os.path.join(root, name))
            if os.path.isabs(link) or not _inside(root, os.path.relpath(os.path.join(base, link), root)):
                raise ValueError(f"Refusing to extract {archive!r}: the link {name!r} points to "
                                 f"{link!r}, outside {root!r}.")


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extract a tar or zip archive into ``path``, refusing members that would land outside it.

    Returns:
        True when the file was an archive of an accepted format and was extracted.
    """
    if archive_format is None:
        return False
    formats = {"auto": ["tar", "zip"], "tar": ["tar"], "zip": ["zip"]}.get(archive_format)
    if formats is None:
        formats = list(archive_format)
    for kind in formats:
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                members = archive.getmembers()
                for member in members:
                    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                        raise ValueError(f"Refusing to extract {file_path!r}: the member "
                                         f"{member.name!r} is a device or FIFO.")
                _check_members(path, [(m.name, m.linkname if (m.issym() or m.islnk()) else None)
                                      for m in members], file_path)
                os.makedirs(path, exist_ok=True)
                if hasattr(tarfile, "data_filter"):
                    archive.extractall(path, filter="data")
                else:
                    archive.extractall(path)  # members checked above
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                _check_members(path, [(name, None) for name in archive.namelist()], file_path)
                os.makedirs(path, exist_ok=True)
                archive.extractall(path)
            return True
    return False


def _cache_home():
    # $MINNET_HOME (the data sets' cache is $MINNET_HOME/datasets, the default subdir here).
    return os.path.dirname(_download.cache_dir())


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """Download a file (once) into the cache and return its path (Keras's ``get_file``).

    Args:
        fname: the file's name in the cache (default: the last part of ``origin``'s path).
            With ``extract``, the folder the archive is extracted into is named after it.
        origin: the URL.
        untar: deprecated Keras name for ``extract=True, archive_format="tar"``.
        md5_hash: deprecated Keras name for ``file_hash`` with MD5.
        file_hash: the expected SHA-256 (64 hex digits) or MD5 (32) of the file; a cached
            file that does not match is downloaded again, a download that does not match is
            refused (and not kept).
        cache_subdir: folder under ``cache_dir`` (an absolute path is used as is).
        hash_algorithm: ``"auto"``, ``"sha256"`` or ``"md5"``.
        extract: extract the archive (tar, tar.gz, zip) and return the folder.
        archive_format: ``"auto"``, ``"tar"``, ``"zip"`` or None.
        cache_dir: the cache's root (default ``$MINNET_HOME``, ``~/.minnet``).
        force_download: download even when a cached copy exists.

    Returns:
        The path of the file, or of the extracted folder with ``extract=True``.

    Example:
        >>> path = mn.utils.get_file(origin="https://example.org/data.csv",
        ...                          file_hash="e3b0c44298fc1c149afbf4c8996fb924...")
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    algorithm = _resolve_algorithm(hash_algorithm, file_hash)
    root = os.path.expanduser(os.fspath(cache_dir)) if cache_dir is not None else _cache_home()
    datadir = os.path.join(root, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    provided = fname is not None
    fname = os.fspath(fname) if provided else os.path.basename(urllib.parse.urlsplit(origin).path)
    if not fname:
        raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'. "
                         "Please specify the `fname` argument.")
    if os.sep in fname or (os.altsep and os.altsep in fname):
        raise ValueError("Paths are no longer accepted as the `fname` argument. To specify the "
                         f"file's parent directory, use the `cache_dir` argument. Received: "
                         f"fname={fname}")
    extract = extract or untar
    if untar:
        archive_format = "tar"
    if extract:
        if provided and "." in fname:
            target = os.path.join(datadir, fname)
            extraction_dir = os.path.join(datadir, f"{fname[:fname.find('.')]}_extracted")
        else:
            target = os.path.join(datadir, f"{fname}_archive")
            extraction_dir = os.path.join(datadir, fname)
    else:
        target = os.path.join(datadir, fname)
    download = force_download or not os.path.exists(target)
    if not download and file_hash is not None and not validate_file(target, file_hash, algorithm):
        print(f"A local file was found, but it seems to be incomplete or outdated because the "
              f"{algorithm} file hash does not match the original value of {file_hash} so we "
              "will re-download the data.")
        download = True
    if download:
        print(f"Downloading data from {origin}")
        try:
            _download.download(origin, target, algorithm, file_hash, verbose=True)
        except ValueError as error:
            raise ValueError(f"Incomplete or corrupted file detected. The {algorithm} file hash "
                             f"does not match the provided value of {file_hash}. ({error})") from None
    if extract:
        if not extract_archive(target, extraction_dir, archive_format):
            raise ValueError(f"Could not extract {target!r}: not a {archive_format} archive.")
        return extraction_dir
    return target
