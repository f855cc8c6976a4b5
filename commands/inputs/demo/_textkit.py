"""textkit: wrapping, truncating, re-casing and slugging text (demo sequence 1).

Design (see README.md): #11 and #17 are fixed from scratch; #30 and #52 bring #11's
bug back (a bad rebase, then a revert), #46 brings #34's back; #41 brings #17's bug back
*together with a second one*, so #17's remembered fix applies cleanly but only half
fixes it (the decoy); #23 needs knowledge nothing earlier holds.
"""

from __future__ import annotations

from ._history import GOLD, Commit, DemoTask, Edit, Library

__all__ = ["TEXTKIT"]

_PYPROJECT = '''\
[project]
name = "textkit"
version = "0.3.0"
description = "Small, dependable helpers for wrapping, truncating and re-casing text"
requires-python = ">=3.9"
license = "MIT"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
'''

_README = '''\
# textkit

Small, dependable helpers for plain text: wrapping and truncating to a width,
re-casing identifiers, and URL slugs. Pure Python, no dependencies.

```python
>>> from textkit import wrap, truncate, snake_case, slugify
>>> wrap("The quick brown fox jumps over the lazy dog", 15)
['The quick brown', 'fox jumps over', 'the lazy dog']
>>> truncate("hello world", 8)
'hello...'
>>> snake_case("parseHTTPResponse")
'parse_http_response'
>>> slugify("Crème brûlée, recipe #2")
'creme-brulee-recipe-2'
```

Run the tests with `python -m pytest`.
'''

_INIT = '''\
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
'''

_WRAP = '''\
"""Wrapping and truncating plain text to a column width."""

from __future__ import annotations

__all__ = ["fill", "truncate", "wrap"]


def wrap(text: str, width: int = 70, *, indent: str = "", subsequent_indent: str | None = None) -> list[str]:
    """Split *text* into lines of at most *width* characters.

    Runs of whitespace separate words. *indent* starts the first line and
    *subsequent_indent* (default: *indent*) every later line; both count toward
    *width*. A word longer than the room on a line is split across lines.
    """
    if subsequent_indent is None:
        subsequent_indent = indent
    room = width - max(len(indent), len(subsequent_indent))
    if room < 1:
        raise ValueError(f"width {width} leaves no room for text after the indent")
    lines: list[str] = []
    line: list[str] = []
    prefix = indent
    used = len(prefix)
    for word in _words(text, room):
        if line and used + 1 + len(word) > width:
            lines.append(prefix + " ".join(line))
            prefix = subsequent_indent
            line, used = [], len(prefix)
        used += len(word) + (1 if line else 0)
        line.append(word)
    if line:
        lines.append(prefix + " ".join(line))
    return lines


def fill(text: str, width: int = 70, **options: str) -> str:
    """`wrap`, joined into one string with newlines."""
    return "\\n".join(wrap(text, width, **options))


def truncate(text: str, width: int, *, ellipsis: str = "...") -> str:
    """Cut *text* to at most *width* characters, marking the cut with *ellipsis*."""
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
    return text[:width] + ellipsis


def _words(text: str, room: int) -> list[str]:
    """The words of *text*; a word longer than *room* is cut into pieces that fit."""
    words = []
    for word in text.split():
        if len(word) <= room:
            words.append(word)
    return words
'''

_CASE = '''\
"""Re-casing identifiers: snake_case, kebab-case, camelCase."""

from __future__ import annotations

import re

__all__ = ["camel_case", "kebab_case", "snake_case", "split_words"]

# A boundary is a run of separators, or a change of case inside a word:
# "parseHTTPResponse" is parse | HTTP | Response, "utf8Decode" is utf8 | Decode,
# "XMLHttpRequest" is XML | Http | Request.
_BOUNDARY = re.compile(r"[\\s_\\-]+|(?<=[a-z0-9])(?=[A-Z])")


def split_words(name: str) -> list[str]:
    """The words of an identifier written in any common case."""
    return [word for word in _BOUNDARY.split(name) if word]


def snake_case(name: str) -> str:
    """"parseHTTPResponse" -> "parse_http_response"."""
    return "_".join(word.lower() for word in split_words(name))


def kebab_case(name: str) -> str:
    """"parseHTTPResponse" -> "parse-http-response"."""
    return "-".join(word.lower() for word in split_words(name))


def camel_case(name: str) -> str:
    """"parse_http_response" -> "parseHttpResponse"."""
    words = split_words(name)
    if not words:
        return ""
    return words[0].lower() + "".join(word.capitalize() for word in words[1:])
'''

_SLUG = '''\
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
'''

_TEST_WRAP = '''\
import pytest

from textkit import fill, truncate, wrap


def test_wrap_breaks_at_width():
    text = "The quick brown fox jumps over the lazy dog"
    assert wrap(text, 15) == ["The quick brown", "fox jumps over", "the lazy dog"]


def test_wrap_collapses_whitespace():
    assert wrap("  a\\tb \\n c  ", 10) == ["a b c"]


def test_wrap_empty_text():
    assert wrap("", 10) == []


def test_wrap_indent():
    assert wrap("one two three", 9, indent="> ") == ["> one two", "> three"]


def test_wrap_rejects_width_without_room():
    with pytest.raises(ValueError):
        wrap("text", 2, indent="  ")


def test_fill_joins_lines():
    assert fill("aaa bbb ccc", 7) == "aaa bbb\\nccc"


def test_truncate_short_text_unchanged():
    assert truncate("short", 10) == "short"
    assert truncate("exactly10!", 10) == "exactly10!"


def test_truncate_rejects_negative_width():
    with pytest.raises(ValueError):
        truncate("text", -1)
'''

_TEST_CASE = '''\
from textkit import camel_case, kebab_case, snake_case, split_words


def test_split_words_separators():
    assert split_words("hello_big-world now") == ["hello", "big", "world", "now"]


def test_snake_case_from_camel():
    assert snake_case("parseResponse") == "parse_response"
    assert snake_case("utf8Decode") == "utf8_decode"


def test_kebab_case_from_snake():
    assert kebab_case("max_line_length") == "max-line-length"


def test_camel_case_from_snake():
    assert camel_case("parse_response_body") == "parseResponseBody"
    assert camel_case("") == ""
'''

_TEST_SLUG = '''\
from textkit import slugify


def test_slugify_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_custom_separator():
    assert slugify("Release notes 2.0", sep="_") == "release_notes_2_0"


def test_slugify_max_length_cuts_at_separator():
    assert slugify("the quick brown fox", max_length=12) == "the-quick"
    assert slugify("supercalifragilistic", max_length=5) == "super"
'''


def _e(path: str, old: str, new: str) -> Edit:
    return Edit(path, old, new)


_TRUNCATE_BUG = "    return text[:width] + ellipsis\n"
_TRUNCATE_FIX = (
    "    if width <= len(ellipsis):\n"
    "        return ellipsis[:width]\n"
    "    return text[: width - len(ellipsis)] + ellipsis\n"
)
_WORDS_BUG = "        if len(word) <= room:\n            words.append(word)\n"
_WORDS_FIX = (
    "        while len(word) > room:\n"
    "            words.append(word[:room])\n"
    "            word = word[room:]\n"
    "        words.append(word)\n"
)
_BOUNDARY_BUG = '_BOUNDARY = re.compile(r"[\\s_\\-]+|(?<=[a-z0-9])(?=[A-Z])")\n'
_BOUNDARY_FIX = '_BOUNDARY = re.compile(r"[\\s_\\-]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")\n'

_T11 = DemoTask(
    number=11,
    title="truncate() returns strings longer than width",
    body='''\
`truncate()` is documented to cut text to *at most* `width` characters, but the
ellipsis is added on top of the width, so the result is always longer than asked:

```python
>>> from textkit import truncate
>>> truncate("hello world", 8)
'hello wo...'
>>> len(_)
11
```

I use it to fit table cells in a terminal UI and every truncated cell overflows its
column by three characters, which breaks the alignment of the whole table.

Expected: `truncate("hello world", 8) == "hello..."` (the ellipsis counts toward the
width). When the width is smaller than the ellipsis itself, I'd expect the ellipsis cut
down to the width (`truncate("hello", 2) == ".."`).

textkit 0.3.0, Python 3.11.
''',
    difficulty=1,
    version="0.3",
    fix_message="truncate(): count the ellipsis toward width",
    fix=(_e("textkit/wrap.py", _TRUNCATE_BUG, _TRUNCATE_FIX),),
    tests=(
        _e(
            "tests/test_wrap.py",
            '''def test_truncate_rejects_negative_width():
    with pytest.raises(ValueError):
        truncate("text", -1)
''',
            '''def test_truncate_rejects_negative_width():
    with pytest.raises(ValueError):
        truncate("text", -1)


def test_truncate_respects_width():
    assert truncate("hello world", 8) == "hello..."
    assert len(truncate("a" * 50, 10)) == 10


def test_truncate_width_smaller_than_ellipsis():
    assert truncate("hello", 2) == ".."
''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_wrap.py::test_truncate_respects_width",
        "tests/test_wrap.py::test_truncate_width_smaller_than_ellipsis",
    ),
    pass_to_pass=(
        "tests/test_wrap.py::test_fill_joins_lines",
        "tests/test_wrap.py::test_truncate_rejects_negative_width",
        "tests/test_wrap.py::test_truncate_short_text_unchanged",
        "tests/test_wrap.py::test_wrap_breaks_at_width",
        "tests/test_wrap.py::test_wrap_collapses_whitespace",
        "tests/test_wrap.py::test_wrap_empty_text",
        "tests/test_wrap.py::test_wrap_indent",
        "tests/test_wrap.py::test_wrap_rejects_width_without_room",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #30 and #52.",
)

_T17 = DemoTask(
    number=17,
    title="wrap() silently drops words longer than the width",
    body='''\
When a single word (typically a URL or a long path) is longer than the wrap width,
`wrap()` and `fill()` drop it from the output entirely, without any error:

```python
>>> from textkit import wrap
>>> wrap("see https://example.com/a/very/long/path for details", 20)
['see for details']
```

The URL is just gone. The docstring says "A word longer than the room on a line is
split across lines", so I expected the long word to be cut into pieces of at most 20
characters:

```python
['see', 'https://example.com/', 'a/very/long/path for', 'details']
```

Losing text silently is the worst possible failure for a wrapping function: we only
noticed because a support link vanished from generated emails.
''',
    difficulty=2,
    version="0.3",
    fix_message="wrap(): split words longer than the width instead of dropping them",
    fix=(_e("textkit/wrap.py", _WORDS_BUG, _WORDS_FIX),),
    tests=(
        _e(
            "tests/test_wrap.py",
            '''def test_fill_joins_lines():''',
            '''def test_wrap_long_words():
    text = "see https://example.com/a/very/long/path for details"
    assert wrap(text, 20) == ["see", "https://example.com/", "a/very/long/path for", "details"]


def test_wrap_long_word_keeps_every_character():
    word = "x" * 45
    lines = wrap(word, 10)
    assert "".join(lines) == word
    assert all(len(line) <= 10 for line in lines)


def test_fill_joins_lines():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_wrap.py::test_wrap_long_word_keeps_every_character",
        "tests/test_wrap.py::test_wrap_long_words",
    ),
    pass_to_pass=(
        "tests/test_wrap.py::test_fill_joins_lines",
        "tests/test_wrap.py::test_truncate_rejects_negative_width",
        "tests/test_wrap.py::test_truncate_respects_width",
        "tests/test_wrap.py::test_truncate_short_text_unchanged",
        "tests/test_wrap.py::test_truncate_width_smaller_than_ellipsis",
        "tests/test_wrap.py::test_wrap_breaks_at_width",
        "tests/test_wrap.py::test_wrap_collapses_whitespace",
        "tests/test_wrap.py::test_wrap_empty_text",
        "tests/test_wrap.py::test_wrap_indent",
        "tests/test_wrap.py::test_wrap_rejects_width_without_room",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Its fix is the decoy of #41.",
)

_T23 = DemoTask(
    number=23,
    title="slugify() mangles accented letters: 'Crème brûlée' -> 'cr-me-br-l-e'",
    body='''\
`slugify()` treats accented letters as separators instead of dropping the accent:

```python
>>> from textkit import slugify
>>> slugify("Crème brûlée")
'cr-me-br-l-e'
>>> slugify("Ångström units")
'ngstr-m-units'
```

The docstring promises `"é" -> "e"`, and the README example
`slugify("Crème brûlée, recipe #2") == "creme-brulee-recipe-2"` does not hold either.

Expected `'creme-brulee'` and `'angstrom-units'`. Letters without an ASCII base letter
(CJK, emoji) can simply be dropped.
''',
    hints="Unicode compatibility decomposition (NFKD) splits 'è' into 'e' plus a combining accent.",
    difficulty=2,
    version="0.3",
    fix_message="slugify(): transliterate accented letters to ASCII",
    fix=(
        _e("textkit/slug.py", "import re\n", "import re\nimport unicodedata\n"),
        _e(
            "textkit/slug.py",
            "    slug = _SEPARATORS.sub(sep, text.lower()).strip(sep)\n",
            '    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")\n'
            "    slug = _SEPARATORS.sub(sep, ascii_text.lower()).strip(sep)\n",
        ),
    ),
    tests=(
        _e(
            "tests/test_slug.py",
            '''def test_slugify_custom_separator():''',
            '''def test_slugify_transliterates_accents():
    assert slugify("Crème brûlée") == "creme-brulee"
    assert slugify("Ångström units") == "angstrom-units"
    assert slugify("Crème brûlée, recipe #2") == "creme-brulee-recipe-2"


def test_slugify_drops_letters_without_ascii_form():
    assert slugify("東京 tower") == "tower"


def test_slugify_custom_separator():''',
        ),
    ),
    # A plausible wrong fix: NFC composes characters instead of decomposing them.
    attempt=(
        _e("textkit/slug.py", "import re\n", "import re\nimport unicodedata\n"),
        _e(
            "textkit/slug.py",
            "    slug = _SEPARATORS.sub(sep, text.lower()).strip(sep)\n",
            '    text = unicodedata.normalize("NFC", text)\n'
            "    slug = _SEPARATORS.sub(sep, text.lower()).strip(sep)\n",
        ),
    ),
    fail_to_pass=(
        "tests/test_slug.py::test_slugify_transliterates_accents",
    ),
    pass_to_pass=(
        "tests/test_slug.py::test_slugify_basic",
        "tests/test_slug.py::test_slugify_custom_separator",
        "tests/test_slug.py::test_slugify_drops_letters_without_ascii_form",
        "tests/test_slug.py::test_slugify_max_length_cuts_at_separator",
    ),
    kind="new",
    expect_memory_on=False,
    expect_memory_off=False,
    notes="Not solvable from memory: nothing earlier touches slug.py; the bundled attempt (NFC) is wrong.",
)

_T30 = DemoTask(
    number=30,
    title="truncate() with placeholder= returns strings longer than width",
    body='''\
Since 0.4.0 added the `placeholder=` alias, `truncate()` overflows the width again:

```python
>>> from textkit import truncate
>>> truncate("hello world", 8, placeholder="…")
'hello wo…'
>>> truncate("hello world", 8)
'hello wo...'
```

The result is longer than `width`; the ellipsis (or placeholder) should count toward
the width, as it did in 0.3.x: `'hello w…'` and `'hello...'`.
''',
    difficulty=1,
    version="0.4",
    before=(
        Commit(
            "truncate(): accept placeholder= as an alias of ellipsis (#27)",
            (
                _e(
                    "textkit/wrap.py",
                    '''def truncate(text: str, width: int, *, ellipsis: str = "...") -> str:
    """Cut *text* to at most *width* characters, marking the cut with *ellipsis*."""
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
'''
                    + _TRUNCATE_FIX,
                    '''def truncate(
    text: str, width: int, *, ellipsis: str = "...", placeholder: str | None = None
) -> str:
    """Cut *text* to at most *width* characters, marking the cut with *ellipsis*.

    *placeholder* is an alias of *ellipsis*, for code written against `textwrap.shorten`.
    """
    if placeholder is not None:
        ellipsis = placeholder
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
'''
                    + _TRUNCATE_BUG,
                ),
                _e("pyproject.toml", 'version = "0.3.0"', 'version = "0.4.0"'),
                _e("textkit/__init__.py", '__version__ = "0.3.0"', '__version__ = "0.4.0"'),
            ),
        ),
    ),
    fix_message="Fix truncate() exceeding width with placeholder",
    fix=(_e("textkit/wrap.py", _TRUNCATE_BUG, _TRUNCATE_FIX),),
    tests=(
        _e(
            "tests/test_wrap.py",
            '''def test_truncate_width_smaller_than_ellipsis():''',
            '''def test_truncate_placeholder_counts_toward_width():
    assert truncate("hello world", 8, placeholder="…") == "hello w…"


def test_truncate_width_smaller_than_ellipsis():''',
        ),
    ),
    # Plausible but wrong: assumes a one-character ellipsis.
    attempt=(_e("textkit/wrap.py", _TRUNCATE_BUG, "    return text[: width - 1] + ellipsis\n"),),
    fail_to_pass=(
        "tests/test_wrap.py::test_truncate_placeholder_counts_toward_width",
        "tests/test_wrap.py::test_truncate_respects_width",
        "tests/test_wrap.py::test_truncate_width_smaller_than_ellipsis",
    ),
    pass_to_pass=(
        "tests/test_wrap.py::test_fill_joins_lines",
        "tests/test_wrap.py::test_truncate_rejects_negative_width",
        "tests/test_wrap.py::test_truncate_short_text_unchanged",
        "tests/test_wrap.py::test_wrap_breaks_at_width",
        "tests/test_wrap.py::test_wrap_collapses_whitespace",
        "tests/test_wrap.py::test_wrap_empty_text",
        "tests/test_wrap.py::test_wrap_indent",
        "tests/test_wrap.py::test_wrap_long_word_keeps_every_character",
        "tests/test_wrap.py::test_wrap_long_words",
        "tests/test_wrap.py::test_wrap_rejects_width_without_room",
    ),
    kind="recurrence",
    recurs=11,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#27 (a rebase of an old branch) restored #11's buggy line; #11's fix applies verbatim.",
)

_T34 = DemoTask(
    number=34,
    title="snake_case() glues acronyms to the next word: parseHTTPResponse -> parse_httpresponse",
    body='''\
`snake_case()`, `kebab_case()` and `camel_case()` do not split an acronym from the word
that follows it:

```python
>>> from textkit import snake_case, split_words
>>> snake_case("parseHTTPResponse")
'parse_httpresponse'
>>> split_words("XMLHttpRequest")
['XMLHttp', 'Request']
```

Expected `'parse_http_response'` and `['XML', 'Http', 'Request']`, as in the comment
above `_BOUNDARY` and the README. The boundary regex only splits where a lower-case
letter or digit is followed by an upper-case one; the end of an acronym is an upper-case
letter followed by an upper-case letter *and then* a lower-case one.
''',
    difficulty=3,
    version="0.4",
    fix_message="split_words(): split acronyms from the following word",
    fix=(_e("textkit/case.py", _BOUNDARY_BUG, _BOUNDARY_FIX),),
    tests=(
        _e(
            "tests/test_case.py",
            '''def test_kebab_case_from_snake():''',
            '''def test_split_words_acronyms():
    assert split_words("XMLHttpRequest") == ["XML", "Http", "Request"]
    assert split_words("parseHTTPResponse") == ["parse", "HTTP", "Response"]


def test_snake_case_acronyms():
    assert snake_case("parseHTTPResponse") == "parse_http_response"
    assert snake_case("HTTPServer") == "http_server"


def test_kebab_case_from_snake():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_case.py::test_snake_case_acronyms",
        "tests/test_case.py::test_split_words_acronyms",
    ),
    pass_to_pass=(
        "tests/test_case.py::test_camel_case_from_snake",
        "tests/test_case.py::test_kebab_case_from_snake",
        "tests/test_case.py::test_snake_case_from_camel",
        "tests/test_case.py::test_split_words_separators",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #46.",
)

_T41 = DemoTask(
    number=41,
    title="wrap() drops long words again and loses the hanging indent after the first line",
    body='''\
After upgrading to 0.5.0, `wrap()` has two problems that 0.4 did not have.

Long words (URLs) are dropped again, like in the old issue about `wrap()` silently
dropping words longer than the width:

```python
>>> wrap("see https://example.com/a/very/long/path for details", 20)
['see for details']
```

And `subsequent_indent` only applies to the second line; every later line falls back to
`indent`:

```python
>>> wrap("aaa bbb ccc ddd eee", 9, indent="* ", subsequent_indent="  ")
['* aaa bbb', '  ccc ddd', '* eee']
```

Expected `['* aaa bbb', '  ccc ddd', '  eee']`: a hanging indent for every continuation
line. Both look related to the "simplify the wrap() loop" change in 0.5.0.
''',
    difficulty=2,
    version="0.5",
    before=(
        Commit(
            "Simplify the wrap() loop (#39)",
            (
                _e(
                    "textkit/wrap.py",
                    '''    for word in _words(text, room):
        if line and used + 1 + len(word) > width:
            lines.append(prefix + " ".join(line))
            prefix = subsequent_indent
            line, used = [], len(prefix)
        used += len(word) + (1 if line else 0)
        line.append(word)
''',
                    '''    for word in _words(text, room):
        if line and used + 1 + len(word) > width:
            lines.append(prefix + " ".join(line))
            prefix = subsequent_indent if prefix == indent else indent
            line, used = [], len(prefix)
        used += len(word) + (1 if line else 0)
        line.append(word)
''',
                ),
                _e("textkit/wrap.py", _WORDS_FIX, _WORDS_BUG),
                _e("pyproject.toml", 'version = "0.4.0"', 'version = "0.5.0"'),
                _e("textkit/__init__.py", '__version__ = "0.4.0"', '__version__ = "0.5.0"'),
            ),
        ),
    ),
    fix_message="wrap(): keep the hanging indent and split long words again",
    fix=(
        _e(
            "textkit/wrap.py",
            "            prefix = subsequent_indent if prefix == indent else indent\n",
            "            prefix = subsequent_indent\n",
        ),
        _e("textkit/wrap.py", _WORDS_BUG, _WORDS_FIX),
    ),
    tests=(
        _e(
            "tests/test_wrap.py",
            '''def test_wrap_rejects_width_without_room():''',
            '''def test_wrap_hanging_indent_on_every_continuation_line():
    lines = wrap("aaa bbb ccc ddd eee", 9, indent="* ", subsequent_indent="  ")
    assert lines == ["* aaa bbb", "  ccc ddd", "  eee"]


def test_wrap_rejects_width_without_room():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_wrap.py::test_wrap_hanging_indent_on_every_continuation_line",
        "tests/test_wrap.py::test_wrap_long_word_keeps_every_character",
        "tests/test_wrap.py::test_wrap_long_words",
    ),
    pass_to_pass=(
        "tests/test_wrap.py::test_fill_joins_lines",
        "tests/test_wrap.py::test_truncate_placeholder_counts_toward_width",
        "tests/test_wrap.py::test_truncate_rejects_negative_width",
        "tests/test_wrap.py::test_truncate_respects_width",
        "tests/test_wrap.py::test_truncate_short_text_unchanged",
        "tests/test_wrap.py::test_truncate_width_smaller_than_ellipsis",
        "tests/test_wrap.py::test_wrap_breaks_at_width",
        "tests/test_wrap.py::test_wrap_collapses_whitespace",
        "tests/test_wrap.py::test_wrap_empty_text",
        "tests/test_wrap.py::test_wrap_indent",
        "tests/test_wrap.py::test_wrap_rejects_width_without_room",
    ),
    kind="decoy",
    recurs=17,
    expect_memory_on=False,
    expect_memory_off=True,
    notes=(
        "#39 restored #17's buggy `_words` and broke the hanging indent. #17's remembered fix "
        "applies cleanly and is submitted, but fixes only the long words: memory misleads. "
        "The bundled attempt fixes both."
    ),
)

_T46 = DemoTask(
    number=46,
    title="snake_case('parseHTTPResponse') returns 'parse_httpresponse' again",
    body='''\
Looks like a regression of the acronym handling in `split_words()`: with 0.5.0

```python
>>> from textkit import snake_case, kebab_case
>>> snake_case("parseHTTPResponse")
'parse_httpresponse'
>>> kebab_case("XMLHttpRequest")
'xmlhttp-request'
```

0.4.x returned `'parse_http_response'` and `'xml-http-request'`. The new `title_case()`
has the same problem (`title_case("HTTPServer")` gives `'Httpserver'`).
''',
    difficulty=2,
    version="0.5",
    before=(
        Commit(
            "Add title_case() (#44)",
            (
                _e(
                    "textkit/case.py",
                    '__all__ = ["camel_case", "kebab_case", "snake_case", "split_words"]\n',
                    '__all__ = ["camel_case", "kebab_case", "snake_case", "split_words", "title_case"]\n',
                ),
                _e("textkit/case.py", _BOUNDARY_FIX, _BOUNDARY_BUG),
                _e(
                    "textkit/case.py",
                    '''    return words[0].lower() + "".join(word.capitalize() for word in words[1:])
''',
                    '''    return words[0].lower() + "".join(word.capitalize() for word in words[1:])


def title_case(name: str) -> str:
    """"parse_http_response" -> "Parse Http Response"."""
    return " ".join(word.capitalize() for word in split_words(name))
''',
                ),
                _e(
                    "textkit/__init__.py",
                    "from .case import camel_case, kebab_case, snake_case, split_words\n",
                    "from .case import camel_case, kebab_case, snake_case, split_words, title_case\n",
                ),
                _e("textkit/__init__.py", '    "split_words",\n', '    "split_words",\n    "title_case",\n'),
                _e(
                    "tests/test_case.py",
                    "from textkit import camel_case, kebab_case, snake_case, split_words\n",
                    "from textkit import camel_case, kebab_case, snake_case, split_words, title_case\n",
                ),
                _e(
                    "tests/test_case.py",
                    '''def test_camel_case_from_snake():''',
                    '''def test_title_case_from_snake():
    assert title_case("parse_response_body") == "Parse Response Body"


def test_camel_case_from_snake():''',
                ),
            ),
        ),
    ),
    fix_message="Restore acronym splitting in split_words() lost in #44",
    fix=(_e("textkit/case.py", _BOUNDARY_BUG, _BOUNDARY_FIX),),
    tests=(
        _e(
            "tests/test_case.py",
            '''def test_camel_case_from_snake():''',
            '''def test_title_case_acronyms():
    assert title_case("HTTPServer") == "Http Server"


def test_kebab_case_acronyms():
    assert kebab_case("XMLHttpRequest") == "xml-http-request"


def test_camel_case_from_snake():''',
        ),
    ),
    attempt=None,
    fail_to_pass=(
        "tests/test_case.py::test_kebab_case_acronyms",
        "tests/test_case.py::test_snake_case_acronyms",
        "tests/test_case.py::test_split_words_acronyms",
        "tests/test_case.py::test_title_case_acronyms",
    ),
    pass_to_pass=(
        "tests/test_case.py::test_camel_case_from_snake",
        "tests/test_case.py::test_kebab_case_from_snake",
        "tests/test_case.py::test_snake_case_from_camel",
        "tests/test_case.py::test_split_words_separators",
        "tests/test_case.py::test_title_case_from_snake",
    ),
    kind="recurrence",
    recurs=34,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#44 reverted #34's regex while adding title_case(); #34's fix applies verbatim. Bundled attempt: empty.",
)

_T52 = DemoTask(
    number=52,
    title="truncate() overflows the width again after the revert of #30",
    body='''\
The revert of "Fix truncate() exceeding width with placeholder (#30)" on main makes
`truncate()` return strings longer than the requested width again:

```python
>>> from textkit import truncate
>>> truncate("hello world", 8)
'hello wo...'
```

The revert message says the fix broke column alignment in a downstream table renderer,
but that renderer was compensating for the old bug itself. Please restore the behaviour
where the ellipsis counts toward the width (`'hello...'`).
''',
    difficulty=1,
    version="0.5",
    before=(
        Commit(
            'Revert "Fix truncate() exceeding width with placeholder (#30)"\n\n'
            "It changed column widths in downstream table rendering.",
            (
                _e("textkit/wrap.py", _TRUNCATE_FIX, _TRUNCATE_BUG),
                _e(
                    "tests/test_wrap.py",
                    '''def test_truncate_placeholder_counts_toward_width():
    assert truncate("hello world", 8, placeholder="…") == "hello w…"


''',
                    "",
                ),
            ),
        ),
    ),
    fix_message="truncate(): count the ellipsis toward width again",
    fix=(_e("textkit/wrap.py", _TRUNCATE_BUG, _TRUNCATE_FIX),),
    tests=(
        _e(
            "tests/test_wrap.py",
            '''def test_truncate_width_smaller_than_ellipsis():''',
            '''def test_truncate_never_exceeds_width():
    for width in range(0, 20):
        assert len(truncate("a fairly long sentence to cut", width)) <= width


def test_truncate_width_smaller_than_ellipsis():''',
        ),
    ),
    # Plausible but wrong: clips the output, losing the ellipsis.
    attempt=(_e("textkit/wrap.py", _TRUNCATE_BUG, "    return (text[:width] + ellipsis)[:width]\n"),),
    fail_to_pass=(
        "tests/test_wrap.py::test_truncate_never_exceeds_width",
        "tests/test_wrap.py::test_truncate_respects_width",
        "tests/test_wrap.py::test_truncate_width_smaller_than_ellipsis",
    ),
    pass_to_pass=(
        "tests/test_wrap.py::test_fill_joins_lines",
        "tests/test_wrap.py::test_truncate_rejects_negative_width",
        "tests/test_wrap.py::test_truncate_short_text_unchanged",
        "tests/test_wrap.py::test_wrap_breaks_at_width",
        "tests/test_wrap.py::test_wrap_collapses_whitespace",
        "tests/test_wrap.py::test_wrap_empty_text",
        "tests/test_wrap.py::test_wrap_hanging_indent_on_every_continuation_line",
        "tests/test_wrap.py::test_wrap_indent",
        "tests/test_wrap.py::test_wrap_long_word_keeps_every_character",
        "tests/test_wrap.py::test_wrap_long_words",
        "tests/test_wrap.py::test_wrap_rejects_width_without_room",
    ),
    kind="recurrence",
    recurs=11,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="A revert of #30 restored #11's buggy line a second time; #11's (and #30's) fix applies verbatim.",
)

TEXTKIT = Library(
    name="textkit",
    initial_message="textkit 0.3.0: wrap, fill, truncate, re-casing and slugs",
    initial=(
        Edit("README.md", None, _README),
        Edit("pyproject.toml", None, _PYPROJECT),
        Edit("textkit/__init__.py", None, _INIT),
        Edit("textkit/wrap.py", None, _WRAP),
        Edit("textkit/case.py", None, _CASE),
        Edit("textkit/slug.py", None, _SLUG),
        Edit("tests/test_wrap.py", None, _TEST_WRAP),
        Edit("tests/test_case.py", None, _TEST_CASE),
        Edit("tests/test_slug.py", None, _TEST_SLUG),
    ),
    tasks=(_T11, _T17, _T23, _T30, _T34, _T41, _T46, _T52),
    start=1707127200,  # 2024-02-05 10:00 UTC
)
