"""Memory servers by name: `swecl run --memory-server NAME` for the MCP memory servers people
use (`swecl memory servers` lists them; docs/design.md section 5, "Presets").

A preset is what a user would otherwise type: the command, the `--memory-env` variables
(`{data}`: the server's data directory, which swecl snapshots), the recall and write tools
with their argument templates, and the version swecl was tested with. `expand_preset`
turns a NAME into those option values; a flag given beside it wins over the preset's.
Nothing else in swecl knows a preset's name: a new one is one entry of `PRESETS`.

The command: an install the user has ($`bin_env`, else `executable` on PATH), else the
package's own launcher at the pinned version (npx, uvx). A confined server (the default
sandbox) sees only its own install and no network, so the launcher, which fetches the
package, is refused there in one line that says how to install it.

Model-needing servers (mem0, cognee) name what the model gateway needs: `model_endpoint`
(the upstream API), `allow_hosts`, and env values with `{model_gateway}` (the gateway's
URL, filled by the gateway's own code); `needs` is what the user must give
(`--memory-env NAME=VALUE`, never recorded).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ledger import SweclError

from ._server_policy import LESSON_TEMPLATE

__all__ = ["PRESETS", "Preset", "expand_preset", "get_preset", "installed_version", "presets_document"]


@dataclass(frozen=True)
class Preset:
    """One memory server swecl knows by name."""

    name: str
    about: str  # one line: what it is
    source: str  # npm | pypi
    package: str
    version: str  # the version swecl's tests ran (or, `tested` False, the one read)
    executable: str  # the installed command's name
    args: tuple[str, ...]  # after the executable (basic-memory's `mcp`)
    launcher: tuple[str, ...]  # the command without an install: fetches `package`==`version`
    bin_env: str  # the variable naming an install (SWECL_SERVER_MEMORY_BIN, as the tests use)
    env: tuple[tuple[str, str], ...] = ()
    recall_tool: str | None = None
    recall_args: str | None = None
    write_tool: str | None = None
    write_args: str | None = None
    python: str | None = None  # the oldest Python it runs on, when newer than swecl's own
    tested: bool = False  # run end to end by swecl's tests at `version`
    needs: tuple[str, ...] = ()  # variables the user must give with --memory-env (keys)
    model_endpoint: str | None = None  # the upstream model API the model gateway forwards to
    allow_hosts: tuple[str, ...] = ()  # what the server itself must reach
    notes: str = ""
    # A program swecl ships (`bridges/`), run by the install's Python (`bin_env` names that
    # Python; never one found on PATH, which may lack the package): for a memory library
    # whose makers publish no MCP server of it. `extra`: what it needs beside `package`.
    script: str | None = None
    extra: tuple[str, ...] = ()
    # `package` installed without its own requirements, `extra` standing for them: a
    # requirement the server never imports (cognee-mcp names torch: 6 GB) left out.
    no_deps: bool = False
    # Variables whose value is a path inside the install's venv (a glob), set when an
    # install is used: cognee's tokenizer reads litellm's bundled encodings, offline.
    install_env: tuple[tuple[str, str], ...] = ()

    @property
    def install(self) -> str:
        """How a user installs it where a confined server can run it."""
        python = f" --python {self.python}" if self.python else ""
        if self.script:
            packages = " ".join([f"{self.package}=={self.version}", *self.extra])
            return (f"uv venv{python} DIR && uv pip install --python DIR/bin/python {packages}, "
                    f"then {self.bin_env}=DIR/bin/python")
        if self.no_deps:
            extra = " ".join(shlex.quote(e) for e in self.extra)
            return (f"uv venv{python} DIR && uv pip install --python DIR/bin/python {extra} && uv pip install "
                    f"--python DIR/bin/python --no-deps {self.package}=={self.version}, "
                    f"then {self.bin_env}=DIR/bin/{self.executable}")
        if self.source == "npm":
            return f"npm install -g {self.package}@{self.version}"
        return f"uv tool install{python} {self.package}=={self.version}"


BRIDGES = Path(__file__).resolve().parent / "bridges"
_MEM0 = str(BRIDGES / "mem0_mcp.py")
_MEM0_VERSION = "2.2.1"
_MEM0_MCP = "mcp==2.3.0"
_COGNEE_MCP = "0.5.7"
# cognee-mcp 0.5.7's requirements but torch (and cognee's docs, neo4j, postgres extras)
_COGNEE_REQUIRES = ("cognee==1.6.5", "fastmcp>=3.4,<4", "mcp>=1.24,<2", "dateparser>=1.2,<2", "httpx>=0.27,<1",
                    "uv>=0.6.3,<1")

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        name="server-memory", about="the reference MCP knowledge-graph memory (JSONL file)", source="npm",
        package="@modelcontextprotocol/server-memory", version="2026.8.31", executable="mcp-server-memory", args=(),
        launcher=("npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"), bin_env="SWECL_SERVER_MEMORY_BIN",
        env=(("MEMORY_FILE_PATH", "{data}/memory.jsonl"),),
        # It matches the query as a substring of names, types and observations: the issue's
        # whole text matches nothing, its repo every lesson of the repo ("repo {repo}").
        recall_tool="search_nodes", recall_args='{"query": "{repo}"}',
        write_tool="create_entities", write_args=None,  # swecl's default for create_entities (`_server_policy`)
        tested=True),
    Preset(
        name="basic-memory", about="markdown notes indexed in SQLite (Basic Machines)", source="pypi",
        package="basic-memory", version="0.24.1", executable="basic-memory", args=("mcp",),
        launcher=("uvx", "--python", "3.12", "--from", "basic-memory==0.24.1", "basic-memory", "mcp"),
        bin_env="SWECL_BASIC_MEMORY_BIN", python="3.12",
        # Notes, index and config in the snapshotted folder; no update checks (no network).
        env=(("BASIC_MEMORY_HOME", "{data}/notes"), ("BASIC_MEMORY_CONFIG_DIR", "{data}/config"),
             ("BASIC_MEMORY_AUTO_UPDATE", "false"), ("FASTMCP_CHECK_FOR_UPDATES", "off")),
        # text search: its hybrid default needs an embedding model it cannot fetch offline;
        # json: the text answer names notes without their content.
        recall_tool="search_notes", recall_args='{"query": "swecl", "search_type": "text", "output_format": "json"}',
        write_tool="write_note",
        write_args=json.dumps({"title": "{instance_id}", "directory": "swecl", "content": LESSON_TEMPLATE}),
        tested=True),
    Preset(
        name="mem0", about="mem0's open-source memory (an LLM extracts memories; Qdrant embedded)", source="pypi",
        package="mem0ai", version=_MEM0_VERSION, executable="python", args=(_MEM0,),
        launcher=("uv", "run", "--no-project", "--quiet", "--with", f"mem0ai=={_MEM0_VERSION}", "--with", _MEM0_MCP,
                  "python", _MEM0), bin_env="SWECL_MEM0_PYTHON", script=_MEM0, extra=(_MEM0_MCP,),
        # Its vector store, history and home in the snapshotted folder; no telemetry; every
        # model call (extraction, embeddings) through the recording gateway.
        env=(("MEM0_DATA", "{data}/mem0"), ("MEM0_DIR", "{data}/mem0-home"), ("MEM0_TELEMETRY", "false"),
             ("OPENAI_BASE_URL", "{model_gateway}")),
        recall_tool="search_memories", recall_args='{"query": "{query}"}',
        write_tool="add_memory", write_args=json.dumps({"text": LESSON_TEMPLATE}),
        needs=("OPENAI_API_KEY",), model_endpoint="https://api.openai.com/v1", tested=True,
        notes="Mem0 publishes MCP servers of its hosted platform only: swecl serves the mem0ai library "
              "(commands/run/memory/bridges/mem0_mcp.py)"),
    Preset(
        name="cognee", about="cognee's knowledge graph and vectors (an LLM cognifies)", source="pypi",
        package="cognee-mcp", version=_COGNEE_MCP, executable="cognee-mcp", args=(),
        launcher=("uvx", "--from", f"cognee-mcp=={_COGNEE_MCP}", "cognee-mcp"), bin_env="SWECL_COGNEE_BIN",
        no_deps=True, extra=_COGNEE_REQUIRES,
        # Its files (SQLite, LanceDB, its graph database) in the snapshotted folder; no
        # telemetry, no price-list fetch, no session memory (answers would depend on earlier
        # recalls); the model and the embedder named, both through the recording gateway.
        env=(("DATA_ROOT_DIRECTORY", "{data}/data"), ("SYSTEM_ROOT_DIRECTORY", "{data}/system"),
             ("CACHE_ROOT_DIRECTORY", "{data}/cache"), ("COGNEE_LOGS_DIR", "{data}/logs"),
             ("COGNEE_REPOS_DIR", "{data}/repos"), ("COGNEE_MCP_TOOL_MODE", "minimal"),
             ("TELEMETRY_DISABLED", "1"), ("LITELLM_OFFLINE_MODE", "true"), ("CACHING", "false"),
             ("LLM_PROVIDER", "openai"), ("LLM_MODEL", "openai/gpt-4o-mini"), ("LLM_ENDPOINT", "{model_gateway}"),
             ("EMBEDDING_PROVIDER", "openai"), ("EMBEDDING_MODEL", "openai/text-embedding-3-small"),
             ("EMBEDDING_DIMENSIONS", "1536"), ("EMBEDDING_ENDPOINT", "{model_gateway}")),
        install_env=(("TIKTOKEN_CACHE_DIR", "lib/python3*/site-packages/litellm/litellm_core_utils/tokenizers"),),
        # CHUNKS: the stored text as it was written (no model call; the audit attributes
        # it); its default routes to a graph completion, an answer its LLM writes.
        recall_tool="recall", recall_args='{"query": "{query}", "search_type": "CHUNKS", "top_k": 5}',
        write_tool="remember", write_args=json.dumps({"data": LESSON_TEMPLATE, "dataset_name": "swecl"}),
        needs=("LLM_API_KEY",), model_endpoint="https://api.openai.com/v1", tested=True,
        notes="cognee-mcp names torch, which its tools never import: installed without it (1.3 GB, not 7)"),
)}


def get_preset(name: str) -> Preset | None:
    return PRESETS.get(name.strip())


def installed_version(preset: Preset, binary: str) -> str | None:
    """The version of `preset`'s package that `binary` belongs to, read from its install
    (an npm package's package.json, a venv's dist-info), or None if it cannot be told."""
    path = Path(binary).resolve()
    if preset.source == "npm":
        for folder in path.parents:
            try:
                meta = json.loads((folder / "package.json").read_text())
            except (OSError, ValueError):
                continue
            if meta.get("name") == preset.package:
                return str(meta.get("version") or "") or None
        return None
    dist = re.sub(r"[-_.]+", "_", preset.package).lower()
    # A script preset's binary is a venv's python, a link to the interpreter it was made
    # from: the venv is where the link is, not where it leads.
    for venv in (Path(binary).absolute().parent.parent, path.parent.parent):
        for found in sorted(venv.glob(f"lib/python*/site-packages/{dist}-*.dist-info")):
            return found.name[len(dist) + 1:].removesuffix(".dist-info")
    return None


def _command(preset: Preset, confined: bool, environ: dict[str, str]) -> tuple[tuple[str, ...], str, str | None]:
    """The preset's command line, where it came from, and the version it runs."""
    given = environ.get(preset.bin_env)
    binary = given or (None if preset.script else shutil.which(preset.executable, path=environ.get("PATH")))
    if binary:
        found = installed_version(preset, binary)
        return (binary, *preset.args), f"${preset.bin_env}" if given else "PATH", found
    if confined and preset.script:
        raise SweclError(f"--memory-server {preset.name}: no Python with {preset.package} given "
                         f"(${preset.bin_env}), and the sandbox lets the server fetch nothing: {preset.install}, "
                         "or --sandbox none")
    if confined:
        raise SweclError(f"--memory-server {preset.name}: no {preset.executable} installed (on PATH or "
                         f"${preset.bin_env}), and the sandbox lets the server fetch nothing: `{preset.install}`, "
                         "or --sandbox none")
    return preset.launcher, preset.launcher[0], preset.version


def _install_env(preset: Preset, binary: str | None) -> list[tuple[str, str]]:
    """`install_env`'s variables, their globs found in the venv of `binary` (an install)."""
    if binary is None:
        return []
    venv = Path(binary).absolute().parent.parent
    found = [(name, sorted(venv.glob(pattern))) for name, pattern in preset.install_env]
    return [(name, str(paths[0])) for name, paths in found if paths]


def expand_preset(memory: Any, *, confined: bool, environ: dict[str, str] | None = None) -> tuple[Any, str | None]:
    """`memory` (MemoryOptions) with a preset NAME in `server` made the options it stands
    for (flags given beside it win: a tool, a template, a variable of the same name), and
    a line saying what runs; `memory` as is when `server` names no preset."""
    preset = get_preset(memory.server) if memory.server else None
    if preset is None:
        return memory, None
    env_vars = dict(os.environ if environ is None else environ)
    given_names = [item.partition("=")[0] for item in memory.env]
    missing = [name for name in preset.needs if name not in given_names]
    if missing:
        raise SweclError(f"--memory-server {preset.name} needs --memory-env {missing[0]}=VALUE (never recorded)")
    argv, origin, version = _command(preset, confined, env_vars)
    own_env = [*preset.env, *_install_env(preset, argv[0] if origin != preset.launcher[0] else None)]
    env = [f"{k}={v}" for k, v in own_env if k not in given_names] + list(memory.env)
    replace = msgspec.structs.replace
    # A template goes with its tool: a tool given beside the preset takes the user's
    # template, or none (the write tool's default, if swecl knows one). --memory-agent-only
    # takes none of the preset's tools.
    own = memory.tools_from == "agent"
    recall_tool = memory.recall_tool or (None if own else preset.recall_tool)
    recall_args = memory.recall_args if own or memory.recall_tool or memory.recall_args else preset.recall_args
    write_tool = memory.write_tool or (None if own else preset.write_tool)
    write_args = memory.write_args if own or memory.write_tool or memory.write_args else preset.write_args
    expanded = replace(memory, server=shlex.join(argv), env=env, recall_tool=recall_tool,
                       recall_args=recall_args, write_tool=write_tool, write_args=write_args, preset=preset.name,
                       model_endpoint=memory.model_endpoint or preset.model_endpoint,
                       allow_hosts=list(memory.allow_hosts) or list(preset.allow_hosts),
                       preset_version=version, tools_from=memory.tools_from or "preset")
    tested = "" if version == preset.version and preset.tested else \
        f" (swecl tested {preset.version})" if preset.tested else " (not tested end to end by swecl)"
    line = (f"swecl: --memory-server {preset.name}: {' '.join(argv)} ({preset.package} {version or '?'}, "
            f"from {origin}){tested}; recall {recall_tool}, write {write_tool}")
    return expanded, line


def presets_document() -> list[dict[str, Any]]:
    """Every preset as JSON (`swecl memory servers --json`)."""
    return [{
        "name": p.name, "about": p.about, "source": p.source, "package": p.package, "version": p.version,
        "tested": p.tested, "install": p.install, "command": list(p.launcher), "installed_command": [p.executable, *p.args],
        "bin_env": p.bin_env, "python": p.python, "env": dict(p.env), "needs": list(p.needs),
        "recall_tool": p.recall_tool, "recall_args": p.recall_args, "write_tool": p.write_tool,
        "write_args": p.write_args, "model_endpoint": p.model_endpoint,
        "allow_hosts": list(p.allow_hosts), "notes": p.notes, "install_env": dict(p.install_env),
    } for p in PRESETS.values()]
