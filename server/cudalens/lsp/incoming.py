"""Document text as a client sends it, made safe to keep: lone surrogates.

JSON allows ``"\\ud800"`` (a UTF-16 surrogate without its pair); ``json.loads`` turns it into a
Python ``str`` holding U+D800, which no UTF-8 encoder accepts, so every later request that
encodes the document (hashing, parsing, nvcc) would fail with UnicodeEncodeError. A paired
surrogate is joined into one character by ``json.loads``, so every surrogate left in a
decoded string is lone. Each becomes U+FFFD (the replacement character, Unicode section
3.9): like the surrogate, it is one UTF-16 code unit and one code point, so positions the
client computes in either encoding still land where the client means.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> tuple[str, int]:
    """``(text with each lone surrogate replaced by U+FFFD, how many were replaced)``."""
    return _SURROGATE.subn(REPLACEMENT, text)
