"""iniconf: INI-style configuration parsing with typed getters (demo sequence 3).

Design (see README.md): #5 and #9 are fixed from scratch; #21 brings #5's bug back
(a feature branch that rewrote `_value`) and #26 brings #9's back (a change to the
accepted words); #14 and #38 need knowledge nothing earlier holds; #33 reads like the
ValueError issues before it, so memory recalls their fixes first, which no longer
apply, and the agent falls back to its own (correct) attempt.
"""

from __future__ import annotations

from ._history import GOLD, Commit, DemoTask, Edit, Library

__all__ = ["INICONF"]

_PYPROJECT = '''\
[project]
name = "iniconf"
version = "0.4.0"
description = "Read INI-style configuration into plain dicts, with typed getters"
requires-python = ">=3.9"
license = "MIT"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
'''

_README = '''\
# iniconf

Read INI-style configuration text into plain `{section: {key: value}}` dicts, resolve
`${key}` / `${section:key}` references, and read values as booleans, integers or lists.

```python
>>> from iniconf import loads, interpolate, to_bool, to_int
>>> config = interpolate(loads("""
... [server]
... host = example.org   ; the public name
... url = https://${host}/
... debug = Yes
... workers = 0x10
... """))
>>> config["server"]["url"], to_bool(config["server"]["debug"]), to_int(config["server"]["workers"])
('https://example.org/', True, 16)
```

Run the tests with `python -m pytest`.
'''

_INIT = '''\
"""iniconf: INI-style configuration into plain dicts, with typed getters."""

from .errors import ConfigError, InterpolationError, ParseError
from .interpolate import interpolate
from .parser import load, loads
from .values import to_bool, to_int, to_list

__all__ = [
    "ConfigError",
    "InterpolationError",
    "ParseError",
    "interpolate",
    "load",
    "loads",
    "to_bool",
    "to_int",
    "to_list",
]
__version__ = "0.4.0"
'''

_ERRORS = '''\
"""What iniconf raises."""


class ConfigError(Exception):
    """Base class of iniconf's errors."""


class ParseError(ConfigError):
    """The text is not valid INI."""


class InterpolationError(ConfigError):
    """A ${...} reference cannot be resolved."""
'''

_PARSER = '''\
"""Parsing INI-style text: [sections], key = value lines, comments."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ParseError

__all__ = ["Config", "load", "loads"]

Config = dict[str, dict[str, str]]

_SECTION = re.compile(r"\\[(?P<name>[^\\]]+)\\]")
_ENTRY = re.compile(r"(?P<key>[^=:\\s][^=:]*?)\\s*[=:]\\s*(?P<value>.*)")


def loads(text: str) -> Config:
    """{section: {key: value}} from INI text; keys before any section go to "DEFAULT".

    Keys are case-insensitive (stored in lower case). Lines starting with "#" or ";"
    are comments, and so is the rest of a line after " #" or " ;".
    """
    config: Config = {"DEFAULT": {}}
    section = config["DEFAULT"]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.fullmatch(line)
        if match:
            section = config.setdefault(match["name"].strip(), {})
            continue
        match = _ENTRY.fullmatch(line)
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        section[match["key"].strip().lower()] = _value(match["value"])
    return config


def _value(text: str) -> str:
    """A value as written, without an inline comment or surrounding whitespace."""
    return text.strip()


def load(path: str | Path) -> Config:
    """`loads` of a UTF-8 file."""
    return loads(Path(path).read_text(encoding="utf-8"))
'''

_VALUES = '''\
"""Typed readings of config values (every value is a string until you ask)."""

from __future__ import annotations

__all__ = ["to_bool", "to_int", "to_list"]

_TRUE = frozenset({"1", "yes", "true", "on"})
_FALSE = frozenset({"0", "no", "false", "off"})


def to_bool(value: str) -> bool:
    """True for 1/yes/true/on, False for 0/no/false/off, in any letter case."""
    word = value.strip()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def to_int(value: str) -> int:
    """The value as an integer; underscores between digits are allowed ("10_000")."""
    return int(value.strip())


def to_list(value: str, sep: str = ",") -> list[str]:
    """The *sep*-separated items of the value, stripped; empty items are dropped."""
    return [item.strip() for item in value.split(sep) if item.strip()]
'''

_INTERPOLATE = '''\
"""${key} and ${section:key} references between config values."""

from __future__ import annotations

import re

from .errors import InterpolationError

__all__ = ["interpolate"]

_REFERENCE = re.compile(r"\\$\\{(?:(?P<section>[^:}]+):)?(?P<key>[^}]+)\\}")


def interpolate(config: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """A copy of *config* with every reference replaced by the value it names.

    "${key}" names a key of the same section (or of DEFAULT), "${section:key}" a key
    of another section. References inside referenced values are resolved too.
    """

    def resolve(section: str, key: str) -> str:
        if key in config.get(section, {}):
            raw = config[section][key]
        elif key in config.get("DEFAULT", {}):
            raw = config["DEFAULT"][key]
        else:
            raise InterpolationError(f"${{{section}:{key}}} is not defined")
        return expand(section, raw)

    def expand(section: str, raw: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            return resolve(match["section"] or section, match["key"].strip().lower())

        return _REFERENCE.sub(substitute, raw)

    return {section: {key: expand(section, raw) for key, raw in values.items()} for section, values in config.items()}
'''

_TEST_PARSER = '''\
import pytest

from iniconf import ParseError, loads


def test_sections_and_keys():
    config = loads("[server]\\nhost = example.org\\nport: 8080\\n")
    assert config["server"] == {"host": "example.org", "port": "8080"}


def test_keys_before_first_section_go_to_default():
    assert loads("name = demo\\n[a]\\nx = 1\\n")["DEFAULT"] == {"name": "demo"}


def test_keys_are_case_insensitive():
    assert loads("[a]\\nMaxSize = 10\\n")["a"] == {"maxsize": "10"}


def test_comment_lines_are_skipped():
    assert loads("# top\\n[a]\\n; note\\nx = 1\\n")["a"] == {"x": "1"}


def test_value_keeps_inner_hash_without_space():
    assert loads("[a]\\ncolor = #ff0000\\nlang = C#\\n")["a"] == {"color": "#ff0000", "lang": "C#"}


def test_bad_line_is_reported_with_its_number():
    with pytest.raises(ParseError, match="line 2"):
        loads("[a]\\nthis is not an entry\\n")
'''

_TEST_VALUES = '''\
import pytest

from iniconf import to_bool, to_int, to_list


def test_to_bool_words():
    assert to_bool("yes") is True
    assert to_bool(" off ") is False
    assert to_bool("1") is True


def test_to_bool_rejects_other_words():
    with pytest.raises(ValueError, match="not a boolean"):
        to_bool("maybe")


def test_to_int_decimal():
    assert to_int(" 42 ") == 42
    assert to_int("10_000") == 10000


def test_to_list():
    assert to_list("a, b,,c ") == ["a", "b", "c"]
    assert to_list("") == []
'''

_TEST_INTERPOLATE = '''\
import pytest

from iniconf import InterpolationError, interpolate, loads


def test_same_section_reference():
    config = interpolate(loads("[s]\\nhost = example.org\\nurl = https://${host}/\\n"))
    assert config["s"]["url"] == "https://example.org/"


def test_other_section_reference():
    config = interpolate(loads("[a]\\nx = 1\\n[b]\\ny = ${a:x}2\\n"))
    assert config["b"]["y"] == "12"


def test_default_section_reference():
    config = interpolate(loads("root = /srv\\n[app]\\ndata = ${root}/data\\n"))
    assert config["app"]["data"] == "/srv/data"


def test_nested_references():
    config = interpolate(loads("[s]\\na = x\\nb = ${a}y\\nc = ${b}z\\n"))
    assert config["s"]["c"] == "xyz"


def test_undefined_reference():
    with pytest.raises(InterpolationError, match="not defined"):
        interpolate(loads("[s]\\na = ${missing}\\n"))
'''


def _e(path: str, old: str, new: str) -> Edit:
    return Edit(path, old, new)


_VALUE_BUG = '''    """A value as written, without an inline comment or surrounding whitespace."""
    return text.strip()
'''
_VALUE_FIX = '''    """A value as written, without an inline comment or surrounding whitespace."""
    text = re.split(r"\\s[#;]", text, maxsplit=1)[0]
    return text.strip()
'''
_BOOL_BUG = "    word = value.strip()\n"
_BOOL_FIX = "    word = value.strip().lower()\n"

_T5 = DemoTask(
    number=5,
    title="Inline comments end up in values: 'port = 8080  # default' -> '8080  # default'",
    body='''\
The docstring of `loads()` says the rest of a line after " #" or " ;" is a comment,
but inline comments are kept as part of the value:

```python
>>> from iniconf import loads
>>> loads("[server]\\nport = 8080  # default\\nhost = example.org ; public name\\n")["server"]
{'port': '8080  # default', 'host': 'example.org ; public name'}
```

Then `to_int(config["server"]["port"])` fails with
`ValueError: invalid literal for int() with base 10: '8080  # default'`.

Expected `{'port': '8080', 'host': 'example.org'}`. A `#` that is not preceded by
whitespace (`color = #ff0000`) must stay part of the value.
''',
    difficulty=1,
    version="0.4",
    fix_message="Strip inline comments from values",
    fix=(_e("iniconf/parser.py", _VALUE_BUG, _VALUE_FIX),),
    tests=(
        _e(
            "tests/test_parser.py",
            '''def test_value_keeps_inner_hash_without_space():''',
            '''def test_inline_comment_is_stripped():
    config = loads("[server]\\nport = 8080  # default\\nhost = example.org ; public name\\n")
    assert config["server"] == {"port": "8080", "host": "example.org"}


def test_value_keeps_inner_hash_without_space():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_parser.py::test_inline_comment_is_stripped",
    ),
    pass_to_pass=(
        "tests/test_parser.py::test_bad_line_is_reported_with_its_number",
        "tests/test_parser.py::test_comment_lines_are_skipped",
        "tests/test_parser.py::test_keys_are_case_insensitive",
        "tests/test_parser.py::test_keys_before_first_section_go_to_default",
        "tests/test_parser.py::test_sections_and_keys",
        "tests/test_parser.py::test_value_keeps_inner_hash_without_space",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #21.",
)

_T9 = DemoTask(
    number=9,
    title="to_bool('Yes') raises ValueError: not a boolean",
    body='''\
`to_bool()` is documented to accept its words "in any letter case", but only lower
case works:

```python
>>> from iniconf import to_bool
>>> to_bool("yes")
True
>>> to_bool("Yes")
Traceback (most recent call last):
  ...
ValueError: not a boolean: 'Yes'
```

`TRUE`, `On` and `No` fail the same way. Config files written by people (and by
Windows tools) use all of these.
''',
    difficulty=1,
    version="0.4",
    fix_message="to_bool(): ignore letter case",
    fix=(_e("iniconf/values.py", _BOOL_BUG, _BOOL_FIX),),
    tests=(
        _e(
            "tests/test_values.py",
            '''def test_to_bool_rejects_other_words():''',
            '''def test_to_bool_any_case():
    assert to_bool("Yes") is True
    assert to_bool("TRUE") is True
    assert to_bool("Off") is False


def test_to_bool_rejects_other_words():''',
        ),
    ),
    attempt=GOLD,
    fail_to_pass=(
        "tests/test_values.py::test_to_bool_any_case",
    ),
    pass_to_pass=(
        "tests/test_values.py::test_to_bool_rejects_other_words",
        "tests/test_values.py::test_to_bool_words",
        "tests/test_values.py::test_to_int_decimal",
        "tests/test_values.py::test_to_list",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes="New bug; the bundled attempt is the gold fix. Recurred by #26.",
)

_T14 = DemoTask(
    number=14,
    title="interpolate() dies with RecursionError on a reference cycle",
    body='''\
A config whose references form a cycle crashes `interpolate()` with a
`RecursionError` (and a 1000-frame traceback) instead of an `InterpolationError`:

```python
>>> from iniconf import loads, interpolate
>>> interpolate(loads("[paths]\\na = ${b}\\nb = ${a}\\n"))
Traceback (most recent call last):
  ...
RecursionError: maximum recursion depth exceeded
```

Please raise `InterpolationError` naming the cycle, e.g.
`reference cycle: paths:a -> paths:b -> paths:a`, so users can find the culprit in a
large file. A key referring to itself (`a = ${a}`) is the shortest cycle.
''',
    difficulty=3,
    version="0.4",
    fix_message="interpolate(): report reference cycles",
    fix=(
        _e(
            "iniconf/interpolate.py",
            '''    def resolve(section: str, key: str) -> str:
        if key in config.get(section, {}):
            raw = config[section][key]
        elif key in config.get("DEFAULT", {}):
            raw = config["DEFAULT"][key]
        else:
            raise InterpolationError(f"${{{section}:{key}}} is not defined")
        return expand(section, raw)

    def expand(section: str, raw: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            return resolve(match["section"] or section, match["key"].strip().lower())

        return _REFERENCE.sub(substitute, raw)

    return {section: {key: expand(section, raw) for key, raw in values.items()} for section, values in config.items()}
''',
            '''    def resolve(section: str, key: str, chain: tuple[str, ...]) -> str:
        name = f"{section}:{key}"
        if name in chain:
            cycle = chain[chain.index(name):] + (name,)
            raise InterpolationError(f"reference cycle: {' -> '.join(cycle)}")
        if key in config.get(section, {}):
            raw = config[section][key]
        elif key in config.get("DEFAULT", {}):
            raw = config["DEFAULT"][key]
        else:
            raise InterpolationError(f"${{{section}:{key}}} is not defined")
        return expand(section, raw, chain + (name,))

    def expand(section: str, raw: str, chain: tuple[str, ...]) -> str:
        def substitute(match: re.Match[str]) -> str:
            return resolve(match["section"] or section, match["key"].strip().lower(), chain)

        return _REFERENCE.sub(substitute, raw)

    return {
        section: {key: expand(section, raw, (f"{section}:{key}",)) for key, raw in values.items()}
        for section, values in config.items()
    }
''',
        ),
    ),
    tests=(
        _e(
            "tests/test_interpolate.py",
            '''def test_undefined_reference():''',
            '''def test_reference_cycle_is_reported():
    with pytest.raises(InterpolationError, match="reference cycle: paths:a -> paths:b -> paths:a"):
        interpolate(loads("[paths]\\na = ${b}\\nb = ${a}\\n"))


def test_self_reference_is_a_cycle():
    with pytest.raises(InterpolationError, match="reference cycle: s:a -> s:a"):
        interpolate(loads("[s]\\na = ${a}\\n"))


def test_undefined_reference():''',
        ),
    ),
    # Plausible but wrong: turns the crash into an error that does not name the cycle.
    attempt=(
        _e(
            "iniconf/interpolate.py",
            '''    return {section: {key: expand(section, raw) for key, raw in values.items()} for section, values in config.items()}
''',
            '''    try:
        return {section: {key: expand(section, raw) for key, raw in values.items()} for section, values in config.items()}
    except RecursionError:
        raise InterpolationError("references nest too deeply") from None
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_interpolate.py::test_reference_cycle_is_reported",
        "tests/test_interpolate.py::test_self_reference_is_a_cycle",
    ),
    pass_to_pass=(
        "tests/test_interpolate.py::test_default_section_reference",
        "tests/test_interpolate.py::test_nested_references",
        "tests/test_interpolate.py::test_other_section_reference",
        "tests/test_interpolate.py::test_same_section_reference",
        "tests/test_interpolate.py::test_undefined_reference",
    ),
    kind="new",
    expect_memory_on=False,
    expect_memory_off=False,
    notes="Not solvable from memory: nothing earlier touches interpolate.py; the bundled attempt does not name the cycle.",
)

_T21 = DemoTask(
    number=21,
    title="Inline comments are part of values again in 0.5.0",
    body='''\
With 0.5.0 the inline comment is back in the value, as in the old issue about
`port = 8080  # default`:

```python
>>> from iniconf import loads
>>> loads("[server]\\nport = 8080  # default\\n")["server"]["port"]
'8080  # default'
```

0.4.x returned `'8080'`. Every `to_int()` on such a value now raises
`ValueError: invalid literal for int() with base 10`.
''',
    difficulty=1,
    version="0.5",
    before=(
        Commit(
            "loads(): accept defaults= for the DEFAULT section (#19)",
            (
                _e(
                    "iniconf/parser.py",
                    '''def loads(text: str) -> Config:
    """{section: {key: value}} from INI text; keys before any section go to "DEFAULT".

    Keys are case-insensitive (stored in lower case). Lines starting with "#" or ";"
    are comments, and so is the rest of a line after " #" or " ;".
    """
    config: Config = {"DEFAULT": {}}
''',
                    '''def loads(text: str, defaults: dict[str, str] | None = None) -> Config:
    """{section: {key: value}} from INI text; keys before any section go to "DEFAULT".

    Keys are case-insensitive (stored in lower case). Lines starting with "#" or ";"
    are comments, and so is the rest of a line after " #" or " ;". *defaults* seeds
    the DEFAULT section; the text overrides it.
    """
    config: Config = {"DEFAULT": {key.lower(): value for key, value in (defaults or {}).items()}}
''',
                ),
                _e("iniconf/parser.py", _VALUE_FIX, _VALUE_BUG),
                _e(
                    "tests/test_parser.py",
                    '''def test_comment_lines_are_skipped():''',
                    '''def test_defaults_seed_the_default_section():
    config = loads("[a]\\nx = 1\\n", defaults={"Name": "demo"})
    assert config["DEFAULT"] == {"name": "demo"}


def test_comment_lines_are_skipped():''',
                ),
                _e("pyproject.toml", 'version = "0.4.0"', 'version = "0.5.0"'),
                _e("iniconf/__init__.py", '__version__ = "0.4.0"', '__version__ = "0.5.0"'),
            ),
        ),
    ),
    fix_message="Strip inline comments again (lost in #19)",
    fix=(_e("iniconf/parser.py", _VALUE_BUG, _VALUE_FIX),),
    tests=(
        _e(
            "tests/test_parser.py",
            '''def test_value_keeps_inner_hash_without_space():''',
            '''def test_inline_comment_is_stripped_with_defaults():
    config = loads("[server]\\nport = 8080  # default\\n", defaults={"host": "localhost"})
    assert config["server"] == {"port": "8080"}


def test_value_keeps_inner_hash_without_space():''',
        ),
    ),
    # Plausible but wrong: handles "#" comments only, not ";".
    attempt=(
        _e(
            "iniconf/parser.py",
            _VALUE_BUG,
            '''    """A value as written, without an inline comment or surrounding whitespace."""
    return text.split(" #", 1)[0].strip()
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_parser.py::test_inline_comment_is_stripped",
        "tests/test_parser.py::test_inline_comment_is_stripped_with_defaults",
    ),
    pass_to_pass=(
        "tests/test_parser.py::test_bad_line_is_reported_with_its_number",
        "tests/test_parser.py::test_comment_lines_are_skipped",
        "tests/test_parser.py::test_defaults_seed_the_default_section",
        "tests/test_parser.py::test_keys_are_case_insensitive",
        "tests/test_parser.py::test_keys_before_first_section_go_to_default",
        "tests/test_parser.py::test_sections_and_keys",
        "tests/test_parser.py::test_value_keeps_inner_hash_without_space",
    ),
    kind="recurrence",
    recurs=5,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#19 rewrote parser.py from an old branch and lost #5's line; #5's fix applies verbatim.",
)

_T26 = DemoTask(
    number=26,
    title="to_bool('TRUE') raises ValueError: not a boolean (regression in 0.5.1)",
    body='''\
Upper-case booleans are rejected again:

```python
>>> from iniconf import to_bool
>>> to_bool("TRUE")
Traceback (most recent call last):
  ...
ValueError: not a boolean: 'TRUE'
>>> to_bool("Enabled")
Traceback (most recent call last):
  ...
ValueError: not a boolean: 'Enabled'
```

This worked in 0.4.x (`to_bool("Yes")` was fixed back then). The new enabled/disabled
words have the same problem.
''',
    difficulty=1,
    version="0.5",
    before=(
        Commit(
            "to_bool(): accept enabled/disabled (#24)",
            (
                _e(
                    "iniconf/values.py",
                    '''_TRUE = frozenset({"1", "yes", "true", "on"})
_FALSE = frozenset({"0", "no", "false", "off"})
''',
                    '''_TRUE = frozenset({"1", "yes", "true", "on", "enabled"})
_FALSE = frozenset({"0", "no", "false", "off", "disabled"})
''',
                ),
                _e("iniconf/values.py", _BOOL_FIX, _BOOL_BUG),
                _e(
                    "tests/test_values.py",
                    '''def test_to_bool_rejects_other_words():''',
                    '''def test_to_bool_enabled_disabled():
    assert to_bool("enabled") is True
    assert to_bool("disabled") is False


def test_to_bool_rejects_other_words():''',
                ),
                _e("pyproject.toml", 'version = "0.5.0"', 'version = "0.5.1"'),
                _e("iniconf/__init__.py", '__version__ = "0.5.0"', '__version__ = "0.5.1"'),
            ),
        ),
    ),
    fix_message="to_bool(): ignore letter case again (lost in #24)",
    fix=(_e("iniconf/values.py", _BOOL_BUG, _BOOL_FIX),),
    tests=(
        _e(
            "tests/test_values.py",
            '''def test_to_bool_rejects_other_words():''',
            '''def test_to_bool_enabled_any_case():
    assert to_bool("Enabled") is True
    assert to_bool("DISABLED") is False


def test_to_bool_rejects_other_words():''',
        ),
    ),
    # Plausible but wrong: adds ALL-CAPS spellings instead of ignoring case.
    attempt=(
        _e(
            "iniconf/values.py",
            '''_TRUE = frozenset({"1", "yes", "true", "on", "enabled"})
_FALSE = frozenset({"0", "no", "false", "off", "disabled"})
''',
            '''_TRUE = frozenset({"1", "yes", "true", "on", "enabled", "YES", "TRUE", "ON", "ENABLED"})
_FALSE = frozenset({"0", "no", "false", "off", "disabled", "NO", "FALSE", "OFF", "DISABLED"})
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_values.py::test_to_bool_any_case",
        "tests/test_values.py::test_to_bool_enabled_any_case",
    ),
    pass_to_pass=(
        "tests/test_values.py::test_to_bool_enabled_disabled",
        "tests/test_values.py::test_to_bool_rejects_other_words",
        "tests/test_values.py::test_to_bool_words",
        "tests/test_values.py::test_to_int_decimal",
        "tests/test_values.py::test_to_list",
    ),
    kind="recurrence",
    recurs=9,
    expect_memory_on=True,
    expect_memory_off=False,
    notes="#24 kept an old copy of to_bool()'s body; #9's fix applies verbatim. The bundled attempt only adds ALL-CAPS words.",
)

_T33 = DemoTask(
    number=33,
    title="to_int('0x1F') raises ValueError: invalid literal for int() with base 10",
    body='''\
Hex (and octal/binary) values are common in config files for masks and permissions,
but `to_int()` only takes decimal:

```python
>>> from iniconf import to_int
>>> to_int("0x1F")
Traceback (most recent call last):
  ...
ValueError: invalid literal for int() with base 10: '0x1F'
```

Expected `31`, and `to_int("0o755") == 493`, `to_int("0b101") == 5`. Decimal values with
leading zeros (`"007"`) should keep working as decimal.
''',
    difficulty=2,
    version="0.5",
    fix_message="to_int(): accept 0x/0o/0b prefixed values",
    fix=(
        _e(
            "iniconf/values.py",
            '''    """The value as an integer; underscores between digits are allowed ("10_000")."""
    return int(value.strip())
''',
            '''    """The value as an integer: decimal ("10_000" allowed) or 0x/0o/0b prefixed."""
    text = value.strip()
    try:
        return int(text, 10)
    except ValueError:
        return int(text, 0)
''',
        ),
    ),
    tests=(
        _e(
            "tests/test_values.py",
            '''def test_to_list():''',
            '''def test_to_int_prefixed():
    assert to_int("0x1F") == 31
    assert to_int("0o755") == 493
    assert to_int("0b101") == 5


def test_to_int_leading_zeros_stay_decimal():
    assert to_int("007") == 7


def test_to_int_rejects_words():
    with pytest.raises(ValueError):
        to_int("lots")


def test_to_list():''',
        ),
    ),
    # A correct fix written differently from the gold one.
    attempt=(
        _e(
            "iniconf/values.py",
            '''    return int(value.strip())
''',
            '''    text = value.strip()
    if text[:2].lower() in ("0x", "0o", "0b"):
        return int(text, 0)
    return int(text)
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_values.py::test_to_int_prefixed",
    ),
    pass_to_pass=(
        "tests/test_values.py::test_to_bool_any_case",
        "tests/test_values.py::test_to_bool_enabled_any_case",
        "tests/test_values.py::test_to_bool_enabled_disabled",
        "tests/test_values.py::test_to_bool_rejects_other_words",
        "tests/test_values.py::test_to_bool_words",
        "tests/test_values.py::test_to_int_decimal",
        "tests/test_values.py::test_to_int_leading_zeros_stay_decimal",
        "tests/test_values.py::test_to_int_rejects_words",
        "tests/test_values.py::test_to_list",
    ),
    kind="new",
    expect_memory_on=True,
    expect_memory_off=True,
    notes=(
        "New bug worded like the ValueError issues before it: the fixes memory ranks first "
        "(#21's, #9's, #5's) no longer apply, so the agent falls back to its own attempt (correct)."
    ),
)

_T38 = DemoTask(
    number=38,
    title="Multi-line values: indented continuation lines raise ParseError",
    body='''\
`configparser` and most INI dialects let a value continue on indented lines, which is
the usual way to write lists:

```ini
[app]
plugins =
    auth
    cache
    metrics
```

iniconf rejects this:

```
iniconf.errors.ParseError: line 3: expected 'key = value' or '[section]', got '    auth'
```

Expected `config["app"]["plugins"] == "auth\\ncache\\nmetrics"` (lines joined with
newlines, the empty first line dropped), so that `to_list(value, sep="\\n")` gives the
items. An indented line before any key is still an error.
''',
    difficulty=4,
    version="0.5",
    fix_message="loads(): support indented continuation lines",
    fix=(
        _e(
            "iniconf/parser.py",
            '''    section = config["DEFAULT"]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.fullmatch(line)
        if match:
            section = config.setdefault(match["name"].strip(), {})
            continue
        match = _ENTRY.fullmatch(line)
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        section[match["key"].strip().lower()] = _value(match["value"])
    return config
''',
            '''    section = config["DEFAULT"]
    key: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if raw[0] in " \\t" and key is not None:
            continued = _value(line)
            section[key] = f"{section[key]}\\n{continued}" if section[key] else continued
            continue
        match = _SECTION.fullmatch(line)
        if match:
            section = config.setdefault(match["name"].strip(), {})
            key = None
            continue
        match = _ENTRY.fullmatch(line)
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        key = match["key"].strip().lower()
        section[key] = _value(match["value"])
    return config
''',
        ),
    ),
    tests=(
        _e(
            "tests/test_parser.py",
            '''def test_bad_line_is_reported_with_its_number():''',
            '''def test_continuation_lines():
    config = loads("[app]\\nplugins =\\n    auth\\n    cache  # fast\\n\\tmetrics\\nname = x\\n")
    assert config["app"] == {"plugins": "auth\\ncache\\nmetrics", "name": "x"}


def test_continuation_of_a_value_on_the_key_line():
    assert loads("[a]\\nmotd = hello\\n  world\\n")["a"]["motd"] == "hello\\nworld"


def test_indented_line_before_any_key_is_an_error():
    with pytest.raises(ParseError, match="line 2"):
        loads("[a]\\n  stray\\n")


def test_bad_line_is_reported_with_its_number():''',
        ),
    ),
    # Plausible but wrong: joins continuation lines with spaces and keeps the empty first line.
    attempt=(
        _e(
            "iniconf/parser.py",
            '''        match = _ENTRY.fullmatch(line)
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        section[match["key"].strip().lower()] = _value(match["value"])
''',
            '''        match = _ENTRY.fullmatch(line)
        if match is None and raw[0] in " \\t" and section:
            last = list(section)[-1]
            section[last] = section[last] + " " + _value(line)
            continue
        if match is None:
            raise ParseError(f"line {number}: expected 'key = value' or '[section]', got {raw!r}")
        section[match["key"].strip().lower()] = _value(match["value"])
''',
        ),
    ),
    fail_to_pass=(
        "tests/test_parser.py::test_continuation_lines",
        "tests/test_parser.py::test_continuation_of_a_value_on_the_key_line",
    ),
    pass_to_pass=(
        "tests/test_parser.py::test_bad_line_is_reported_with_its_number",
        "tests/test_parser.py::test_comment_lines_are_skipped",
        "tests/test_parser.py::test_defaults_seed_the_default_section",
        "tests/test_parser.py::test_indented_line_before_any_key_is_an_error",
        "tests/test_parser.py::test_inline_comment_is_stripped",
        "tests/test_parser.py::test_inline_comment_is_stripped_with_defaults",
        "tests/test_parser.py::test_keys_are_case_insensitive",
        "tests/test_parser.py::test_keys_before_first_section_go_to_default",
        "tests/test_parser.py::test_sections_and_keys",
        "tests/test_parser.py::test_value_keeps_inner_hash_without_space",
    ),
    kind="new",
    expect_memory_on=False,
    expect_memory_off=False,
    notes="Not solvable from memory: a feature-sized change nothing earlier resembles; the bundled attempt joins with spaces.",
)

INICONF = Library(
    name="iniconf",
    initial_message="iniconf 0.4.0: INI parsing, interpolation, typed values",
    initial=(
        Edit("README.md", None, _README),
        Edit("pyproject.toml", None, _PYPROJECT),
        Edit("iniconf/__init__.py", None, _INIT),
        Edit("iniconf/errors.py", None, _ERRORS),
        Edit("iniconf/parser.py", None, _PARSER),
        Edit("iniconf/values.py", None, _VALUES),
        Edit("iniconf/interpolate.py", None, _INTERPOLATE),
        Edit("tests/test_parser.py", None, _TEST_PARSER),
        Edit("tests/test_values.py", None, _TEST_VALUES),
        Edit("tests/test_interpolate.py", None, _TEST_INTERPOLATE),
    ),
    tasks=(_T5, _T9, _T14, _T21, _T26, _T33, _T38),
    start=1711965600,  # 2024-04-01 10:00 UTC
)
