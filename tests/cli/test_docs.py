"""Every command is documented, in the style of sqlite-utils: docs/commands.md has a section
for each one."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from commands.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
COMMANDS = (ROOT / "docs" / "commands.md").read_text()


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """A group's commands by name, as click lists and finds them (the top group imports
    each command's module on first use)."""
    ctx = click.Context(group)
    return {name: command for name in group.list_commands(ctx) if (command := group.get_command(ctx, name))}


def all_commands(group: click.Group = cli, prefix: str = "swecl") -> list[str]:
    found = []
    for name, command in sorted(subcommands(group).items()):
        path = f"{prefix} {name}"
        found.append(path)
        if isinstance(command, click.Group):
            found.extend(all_commands(command, path))
    return found


def command_of(path: str) -> click.Command:
    """`swecl memory export` -> its click command."""
    cmd: click.Command = cli
    for part in path.split()[1:]:
        assert isinstance(cmd, click.Group)
        cmd = subcommands(cmd)[part]
    return cmd


@pytest.mark.parametrize("command", all_commands())
def test_every_command_is_in_the_command_reference(command: str) -> None:
    top = " ".join(command.split()[:2])
    assert re.search(rf"^### {re.escape(top)}$", COMMANDS, re.M), f"docs/commands.md has no '### {top}' section"
    assert command in COMMANDS, f"docs/commands.md never mentions `{command}`"


def command_section(top: str) -> str:
    """docs/commands.md from `### swecl TOP` to the next heading (a subcommand such as
    `swecl memory export` is in its top command's section)."""
    found = re.search(rf"^### {re.escape(top)}\n(.*?)(?=^#{{1,3}} |\Z)", COMMANDS, re.M | re.S)
    assert found, f"docs/commands.md has no '### {top}' section"
    return found.group(1)


def option_names(cmd: click.Command) -> list[str]:
    """Each option's long name (`--stage`), or its short one when it has no long one."""
    names = []
    for param in cmd.params:
        if isinstance(param, click.Option):
            longs = [o for o in param.opts if o.startswith("--")]
            name = longs[0] if longs else param.opts[0]
            if name != "--help":
                names.append(name)
    return names


@pytest.mark.parametrize("command", all_commands())
def test_every_option_is_in_its_command_section(command: str) -> None:
    section = command_section(" ".join(command.split()[:2]))
    missing = [name for name in option_names(command_of(command))
               if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", section)]
    assert missing == [], f"docs/commands.md's `{command}` section does not name {missing}"


@pytest.mark.parametrize("command", all_commands())
def test_every_command_has_help(command: str) -> None:
    cmd = command_of(command)
    assert (cmd.help or "").strip(), f"{command} has no help text"


def test_the_readme_gives_the_two_setup_commands_and_ci_runs_the_test_one() -> None:
    assert "./dev swecl run" in README and "./dev pytest" in README
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "exec ./dev pytest" in ci


def test_the_readme_is_read_in_five_minutes() -> None:
    lines = len(README.splitlines())
    assert lines <= 300, f"README.md has {lines} lines; move detail to docs/"


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def without_code(text: str) -> str:
    """Markdown text without fenced blocks and inline code, where a `[x](y)` is no link."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation but `-` and `_` dropped, spaces
    to `-`; a repeated heading gets `-1`, `-2`, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", without_code(path.read_text()), re.M):
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    """Each `[text](target)` and `![alt](target)` of the README and docs/ names a file of
    the repository, and a `#anchor` into a Markdown file names one of its headings."""
    broken = []
    for target in LINK.findall(without_code(doc.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http(s), mailto
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor.lower() not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert broken == [], f"{doc.relative_to(ROOT)}: {broken}"


def test_the_link_check_sees_links_and_anchors() -> None:
    """The link test cannot pass by finding nothing."""
    readme_links = LINK.findall(without_code(README))
    assert "docs/commands.md#swecl-run" in readme_links and "docs/concepts.md#the-ledger" in readme_links
    assert {"swecl-run", "swecl-memory", "the-ledger"} <= anchors(ROOT / "docs" / "commands.md") | anchors(
        ROOT / "docs" / "concepts.md")
    assert "report.png" in LINK.findall(COMMANDS)


def test_every_design_citation_names_a_section_of_the_design_document() -> None:
    """The code, the README and docs/ cite `docs/design.md section N`; each N must be a heading
    there (`## N. Title`), and nothing cites a design document outside the repository."""
    root = Path(__file__).resolve().parents[2]
    design = (root / "docs" / "design.md").read_text()
    sections = set(re.findall(r"^## (\d+)\. ", design, re.M))
    cited: dict[str, set[str]] = {}
    stale = []
    docs = [p for p in sorted((root / "docs").glob("*.md")) if p.name != "design.md"]
    for path in [root / "README.md", *docs, *sorted(root.glob("[a-z]*/**/*.py"))]:  # not .venv, .dev
        text = path.read_text(errors="replace")
        for number in re.findall(r"docs/design\.md section (\d+)", text):
            cited.setdefault(number, set()).add(str(path.relative_to(root)))
        if re.search(r"\bDESIGN(?:\.md)? section \d", text):
            stale.append(str(path.relative_to(root)))
    assert cited, "no citation found: the scan is looking in the wrong place"
    missing = {n: sorted(paths) for n, paths in cited.items() if n not in sections}
    assert missing == {}, f"cited sections the design document lacks: {missing}"
    assert stale == [], f"cite docs/design.md, not an outside document: {stale}"


@pytest.mark.parametrize("command", all_commands())
def test_every_option_has_help(command: str) -> None:
    cmd = command_of(command)
    bare = [p.opts[0] for p in cmd.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert bare == [], f"{command}: options without help text: {bare}"


def test_the_tour_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Each command of the README's tour, as printed there, on a ledger with runs 1 to 4
    (what `./dev swecl run` leaves); `swecl run` itself is the subject of tests/run, and
    `swecl view` (a server, it runs until Ctrl-C) of tests/cli/test_view.py."""
    import shlex

    from bench.ledgers import LedgerBuilder
    from commands.cli import main
    from ledger import Ledger
    from tests.audit.crafted import accum_run, blank_run

    block = README.split("## A tour", 1)[1].split("```", 2)[1].strip().splitlines()
    assert block[0].split("#")[0].strip() == "source .venv/bin/activate"
    venv = Path(__file__).resolve().parents[2] / ".venv"
    assert not venv.is_dir() or (venv / "bin" / "swecl").exists(), "the set-up's venv has no swecl to put on PATH"
    results = tmp_path / "results"
    results.mkdir()
    with Ledger.open(results / "ledger.db", create=True) as led:
        builder = LedgerBuilder(led)
        blank_run(builder, "1")
        accum_run(builder, "2", source="1")
        blank_run(builder, "3")
        blank_run(builder, "4")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWECL_RESULTS", raising=False)
    commands = [shlex.split(line.split("#")[0]) for line in block[1:]]
    assert all(c[0] == "swecl" for c in commands), commands
    for argv in commands:
        if argv[1] in ("run", "view"):
            continue
        try:
            main(argv[1:])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        assert code == 0 and out.out.strip(), (argv, out.err)


GLOSSARY_TERMS = (
    "ledger", "event", "stream", "run version", "stage", "pass", "a(i,j)", "daydream", "dream pass", "copy-seeded",
    "recall", "substrate", "memory server", "reference arm", "ACC", "F", "BWT", "FWT", "AULC", "CL-P", "CL-S", "CL-F1",
    "CL-Score", "normalized gain", "memory efficiency", "memory funnel", "verdict line", "McNemar", "leakage flag",
    "fork", "counterfactual", "validation", "gold/no-op", "task name",
)


def test_the_glossary_has_an_entry_per_term_and_each_readme_link_into_the_concepts_names_a_heading() -> None:
    concepts = ROOT / "docs" / "concepts.md"
    glossary = concepts.read_text().split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]
    entries = {h.strip().lower() for h in re.findall(r"^### (.+)$", glossary, re.M)}
    assert {t.lower() for t in GLOSSARY_TERMS} <= entries, sorted({t.lower() for t in GLOSSARY_TERMS} - entries)
    headings = anchors(concepts)
    into = [t for t in LINK.findall(without_code(README)) if t.split("#")[0] == "docs/concepts.md"]
    assert len(into) > len(GLOSSARY_TERMS) // 2, into  # the README links its terms to their entries
    bad = [t for t in into if "#" in t and t.split("#", 1)[1] not in headings]
    assert bad == [], f"README links into docs/concepts.md with no such heading: {bad}"
    assert "docs/concepts.md#goldno-op" in into and "docs/concepts.md#aij" in into  # the anchors GitHub makes
