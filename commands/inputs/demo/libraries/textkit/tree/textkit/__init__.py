"""textkit: small, dependable helpers for plain text."""

from .case import camel_case, kebab_case, snake_case, split_words
from .slug import slugify
from .wrap import fill, truncate, wrap

__all__ = [
    "camel_case",
    "fill",
    "kebab_case",
    "slugify",
    "snake_case",
    "split_words",
    "truncate",
    "wrap",
]
__version__ = "0.3.0"
