"""A public-domain text shipped with minnet: the opening 290 KB of "tiny Shakespeare".

The text is the start of the collection Andrej Karpathy assembled for char-rnn
(``data/tinyshakespeare/input.txt`` of github.com/karpathy/char-rnn, commit 6f9487a): the
whole of *Coriolanus*, then scenes of *Richard III*, cut at a blank line below 290,000 bytes.
Shakespeare's plays are in the public domain; the selection is reproduced as it stands.
It is here so that the character-model examples train on real language with no download.
"""
import os

from minnet.datasets._download import file_hash

__all__ = ["load_data", "SHA256", "PATH"]

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shakespeare.txt")
# SHA-256 of the shipped file, checked on every load.
SHA256 = "2efcee893e35f72e1f2a9e1d1cf460a15c87cd1f29ea567eefb1c5895a5ee66c"


def load_data():
    """The shipped text as one ``str`` (289,994 characters, ASCII, lines end in ``\\n``).

    Raises:
        OSError: the file is missing or is not the one minnet ships (its SHA-256 differs).
    """
    try:
        digest = file_hash(PATH, "sha256")
    except OSError as error:
        raise OSError(f"Could not read the Shakespeare text at {PATH!r} (the file ships with "
                      f"minnet; reinstall the package): {error}") from error
    if digest != SHA256:
        raise OSError(f"The Shakespeare text at {PATH!r} is damaged: its SHA-256 is {digest}, "
                      f"not the {SHA256} minnet ships; reinstall the package.")
    with open(PATH, encoding="ascii") as handle:
        return handle.read()
