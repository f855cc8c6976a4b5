"""URL slugs from arbitrary titles."""

from __future__ import annotations

import re

__all__ = ["slugify"]

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def slugify(text: str, *, sep: str = "-", max_length: int | None = None) -> str:
    """A lower-case ASCII slug of *text*: "Hello, World!" -> "hello-world".

    Runs of anything but letters and digits become one *sep*; letters keep their
    base letter without accents ("é" -> "e"). With *max_length*, the slug is cut
    at a separator when it can be.
    """
    slug = _SEPARATORS.sub(sep, text.lower()).strip(sep)
    if max_length is not None and len(slug) > max_length:
        cut = slug[: max_length + 1]
        slug = cut[: cut.rfind(sep)] if sep in cut else slug[:max_length]
    return slug
