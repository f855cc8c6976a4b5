"""The packages' contracts: each keeps its private modules to itself, the layers import
downward only (ledger <- projections <- commands), only the ledger opens SQLite, and every
public name a package lists resolves. Module by module, at any depth (imports inside
functions and under TYPE_CHECKING count): no two modules import each other in a circle,
and no module takes a private name from outside the package that holds it."""

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


# The module graph, at any depth: every module of the packages and bench, and every import
# statement in it (at the top, in a function, under TYPE_CHECKING), relative ones resolved.
SCANNED = (*PACKAGES, "bench")


def _module_files() -> dict[str, Path]:
    """Module name -> file, for every .py file reachable as a module (each folder on the way
    is a package); a package's `__init__.py` is the package's own module."""
    files: dict[str, Path] = {}
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if not all((ROOT.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))):
                continue  # data shipped inside a package (the demo libraries), not a module of it
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    return files


def _package_of(module: str, path: Path) -> str:
    """The package a module lives in: itself for a package's `__init__`, else its parent."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str, path: Path, known: set[str]) -> list[tuple[int, str, str]]:
    """(line, target module, full imported name) for each import of `path` at any depth.
    The target is the module whose code the import runs: `from pkg import sub` names the
    submodule `pkg.sub`, `from pkg import name` the package's `__init__`."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(module, path).split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                found.append((node.lineno, full if full in known else source, full))
    return found


def _graph() -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    """The modules, and for each the modules of ours it imports (with the first line)."""
    files = _module_files()
    edges: dict[str, dict[str, int]] = {name: {} for name in files}
    for name, path in files.items():
        for line, target, _ in _imports(name, path, set(files)):
            if target in files and target != name:
                edges[name].setdefault(target, line)
    return files, edges


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The shortest circle through each module that is on one (Tarjan's strongly connected
    groups, then a breadth-first walk from each member back to itself), each circle once."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    cycles: list[list[str]] = []
    for group in sorted(groups):
        members = set(group)
        for start in group:
            came_from: dict[str, str] = {}
            frontier = [start]
            while frontier and start not in came_from:
                following = []
                for node in frontier:
                    for nxt in sorted(edges[node]):
                        if nxt in members and nxt not in came_from:
                            came_from[nxt] = node
                            following.append(nxt)
                frontier = following
            chain = [start]
            while len(chain) == 1 or chain[-1] != start:
                chain.append(came_from[chain[-1]])
            chain.reverse()
            first = chain.index(min(chain[:-1]))  # one spelling per circle, from its least module
            chain = chain[first:-1] + chain[:first + 1]
            if chain not in cycles:
                cycles.append(chain)
    return cycles


def test_no_import_cycle_between_modules() -> None:
    files, edges = _graph()
    knots = []
    for chain in _cycles(edges):
        steps = [f"  {a} imports {b} ({files[a].relative_to(ROOT)}:{edges[a][b]})" for a, b in zip(chain, chain[1:])]
        knots.append(" -> ".join(chain) + "\n" + "\n".join(steps))
    assert knots == [], (
        "modules import each other in a circle (counting imports inside functions and a package's "
        "__init__ re-exports). Break each: move the piece both need down into a module both can "
        "import, or split a module that does two jobs; an import inside a function hides a "
        "circle, it does not break it:\n" + "\n".join(knots))


def _private_owner(full: str, files: dict[str, Path]) -> str | None:
    """The package a private name belongs to, or None if `full` names nothing private: the
    package holding the first `_`-prefixed part (a `_module`, or a `_name` in a module)."""
    parts = full.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            owner = ".".join(parts[:i])
            while owner in files and files[owner].name != "__init__.py":
                owner = owner.rpartition(".")[0]  # a plain module's privates: its package's
            return owner
    return None


def test_no_module_imports_a_private_name_from_outside_its_package() -> None:
    files = _module_files()
    offences = []
    for name, path in files.items():
        inside = _package_of(name, path)
        for line, _, full in _imports(name, path, set(files)):
            if full.split(".")[0] not in SCANNED:
                continue
            owner = _private_owner(full, files)
            if owner is not None and inside != owner and not inside.startswith(owner + "."):
                offences.append(f"{path.relative_to(ROOT)}:{line}: {full} (private to {owner})")
    assert offences == [], (
        "a module reaches into another package's private names. Make the piece public: a public "
        "name of a small module named for what it holds (a `_module` is fine inside its own "
        "package), exported from the package if other packages need it:\n" + "\n".join(offences))


def test_the_module_graph_sees_nested_relative_and_reexported_imports(tmp_path: Path) -> None:
    """A positive control for the two checks above, on a planted package."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from ._a import f\n")
    (pkg / "_a.py").write_text("def f():\n    from .sub import _b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_b.py").write_text("import pkg\n")
    known = {"pkg", "pkg._a", "pkg.sub", "pkg.sub._b"}
    assert _imports("pkg", pkg / "__init__.py", known) == [(1, "pkg._a", "pkg._a.f")]
    assert _imports("pkg._a", pkg / "_a.py", known) == [(2, "pkg.sub._b", "pkg.sub._b")]
    edges = {"pkg": {"pkg._a": 1}, "pkg._a": {"pkg.sub._b": 2}, "pkg.sub": {}, "pkg.sub._b": {"pkg": 1}}
    assert _cycles(edges) == [["pkg", "pkg._a", "pkg.sub._b", "pkg"]]
    files = {m: pkg / "x.py" for m in known} | {"pkg": pkg / "__init__.py", "pkg.sub": pkg / "sub" / "__init__.py"}
    assert _private_owner("pkg.sub._b", files) == "pkg.sub"
    assert _private_owner("pkg._a.f", files) == "pkg"
    assert _private_owner("pkg.sub.public", files) is None


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


def test_a_read_command_loads_neither_the_graders_nor_the_run_machinery() -> None:
    """`swecl runs` (and every command that only reads the ledger) imports its own command's
    module, not every command's: the graders and `commands.run` are ~0.1 s of CPU at each
    start. A command name mistyped is still answered with the names it is close to."""
    import json
    import subprocess
    import sys

    code = """
import json, sys, click
from commands.cli import cli
ctx = click.Context(cli)
runs = cli.get_command(ctx, "runs")
loaded = sorted(m for m in ("graders", "commands.run", "commands.cli._run", "commands.cli._grade") if m in sys.modules)
try:
    cli.resolve_command(ctx, ["runz"])
except click.exceptions.NoSuchCommand as exc:
    close = exc.possibilities
print(json.dumps([runs.name, loaded, sorted(close), "run" in cli.list_commands(ctx)]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    name, loaded, close, listed = json.loads(done.stdout)
    assert (name, loaded, close, listed) == ("runs", [], ["run", "runs"], True)


def test_a_run_of_the_demo_loads_neither_pydantic_nor_the_cli_agents() -> None:
    """What a `swecl run` of the demo imports before it starts: not pydantic's models
    (commands/inputs/_schemas.py, ~90 ms of CPU), which only reading a user's curriculum,
    rows or predictions needs, nor the CLI agents' adapters, which only their runs need,
    nor the memory-server client (asyncio, the MCP SDK), which only --memory-server needs."""
    import json
    import subprocess
    import sys

    code = ("import sys, commands.cli, commands.run._orchestrate, commands.run._demo_suite, agents; "
            "from commands.inputs import demo_benchmark; demo_benchmark(materialise=False); "
            "agents.build_agent('demo', agents.RunSupplies(gold=None, predictions=None, command=None, "
            "demo_attempts={}, runs_here=False)); "
            "loaded = lambda: sorted(m for m in ('pydantic', 'agents._claude', 'agents._codex', 'agents._gemini', "
            "'agents._mini', 'agents._opencode', 'commands.run.memory._server_host', "
            "'commands.run.memory._server_snapshot', 'asyncio') if m in sys.modules); "
            "before = loaded(); from commands.inputs import SwebenchRow; agents.build_agent('mini-swe-agent', "
            "agents.RunSupplies(gold=None, predictions=None, command=None, demo_attempts=None, runs_here=False)); "
            "import json; print(json.dumps([before, loaded(), SwebenchRow.__module__]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    before, after, module = json.loads(done.stdout)
    assert before == [] and module == "commands.inputs._schemas"
    assert {"pydantic", "agents._mini"} <= set(after)  # each loads where it is needed


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
