"""The packages' contracts: each keeps its private modules to itself, the layers import
downward only (ledger <- projections <- commands), only the ledger opens SQLite, and every
public name a package lists resolves."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ledger", "commands", "projections", "agents", "graders")


def _modules(package: str) -> list[str]:
    names = [package]
    for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
        if not info.name.endswith("__main__"):  # running it is its import
            names.append(info.name)
    return names


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every absolute module an import statement of `path` names, anywhere in the file."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_no_package_imports_another_packages_private_modules() -> None:
    offences = []
    for package in (*PACKAGES, "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, module in _imported_modules(path):
                parts = module.split(".")
                if parts[0] in PACKAGES and parts[0] != package and any(p.startswith("_") for p in parts[1:]):
                    offences.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert offences == [], "import the package's public names instead:\n" + "\n".join(offences)


# What each layer may not import: the ledger stores, the projections read it, and
# neither knows about the write side, the agents or the graders.
FORBIDDEN = {
    "ledger": ("commands", "projections", "agents", "graders"),
    "projections": ("commands", "agents", "graders"),
    # the benchmarks share the tests' subprocess and fault-injection kits (bench.processes,
    # bench.crashkit), not the other way round
    "bench": ("tests",),
}


def test_the_layers_import_downward_only() -> None:
    offences = []
    for package, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, module in _imported_modules(path):
                if module.split(".")[0] in forbidden:
                    offences.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert offences == [], "a lower layer imports a higher one:\n" + "\n".join(offences)


# The append benchmark's references measure SQLite itself (apsw alone, the eventsourcing
# recorder on the stdlib's sqlite3): going through the ledger would measure the wrong thing.
SQLITE_REFERENCES = {"bench/_append.py"}


def test_only_the_ledger_touches_sqlite() -> None:
    offences = []
    for package in (*PACKAGES, "bench"):
        if package == "ledger":
            continue
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() in SQLITE_REFERENCES:
                continue
            for line, module in _imported_modules(path):
                if module.split(".")[0] in ("apsw", "sqlite3"):
                    offences.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert offences == [], "open SQLite through ledger (ledger.sqlite, Ledger):\n" + "\n".join(offences)


def test_the_layering_check_sees_what_it_forbids(tmp_path: Path) -> None:
    """A positive control: the scanner finds an import nested in a function and a
    `from ... import` alike, so an empty list above means there were none."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    import apsw\n    from commands.run import x\n")
    assert [m for _, m in _imported_modules(planted)] == ["apsw", "commands.run", "commands.run.x"]


@pytest.mark.parametrize("module", [m for p in PACKAGES for m in _modules(p)])
def test_every_name_in_all_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    names = getattr(imported, "__all__", [])
    assert len(names) == len(set(names)), f"{module}.__all__ lists a name twice"
    missing = [name for name in names if not hasattr(imported, name)]
    assert missing == [], f"{module}.__all__ names what it does not have: {missing}"


def test_reading_an_error_class_or_starting_the_recall_server_loads_no_sqlite() -> None:
    import subprocess
    import sys

    code = ("import sys, ledger, ledger.errors, agents, agents.recall_server; "
            "print(sorted(m for m in ('apsw', 'msgspec', 'graders', 'polars') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_a_lazy_name_resolves_once_to_what_its_module_defines() -> None:
    import ledger
    from ledger import _store, events

    assert ledger.Ledger is _store.Ledger and ledger.events is events
    assert "Ledger" in vars(ledger)  # kept: the next use does not come back to __getattr__
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        ledger.Nope  # noqa: B018


def _lazy_packages() -> list[str]:
    return [m for p in PACKAGES for m in _modules(p) if isinstance(getattr(importlib.import_module(m), "_EXPORTS", None), dict)]


@pytest.mark.parametrize("package", _lazy_packages())
def test_a_lazy_table_and_its_type_checking_imports_agree(package: str) -> None:
    """A lazy package lists its names twice: `_EXPORTS` (what resolves at run time) and the
    `if TYPE_CHECKING:` imports (what type checkers and editors see). They must not drift."""
    imported = importlib.import_module(package)
    tree = ast.parse(Path(imported.__file__).read_text())
    seen: set[tuple[str, str]] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.unparse(stmt)
                for alias in stmt.names:
                    seen.add((alias.name, stmt.module or alias.name))  # `from . import x`: x is the module
    assert seen == {(name, module) for name, module in imported._EXPORTS.items()}
    assert set(imported.__all__) >= set(imported._EXPORTS)
