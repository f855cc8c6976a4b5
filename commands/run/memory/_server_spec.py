"""`--memory-server SPEC` and `--memory-env NAME=VALUE`: which MCP memory server to put under test.

SPEC is a command line (a stdio server: `npx -y @modelcontextprotocol/server-memory`,
`basic-memory mcp`), split as a POSIX shell would (no expansion), or an http(s) URL
(a streamable-HTTP server). `{data}` in a mapped variable's value is the server's
private data directory, made by swecl per run and sequence: what it holds is what gets
snapshotted, so a server keeps its state there (`MEMORY_FILE_PATH={data}/memory.jsonl`).
`{model_gateway}` is the base URL of swecl's recording gateway to the server's own model
API (`--memory-model-endpoint`, `_model_gateway`): `OPENAI_BASE_URL={model_gateway}`.
A stdio server's process gets those and a few neutral variables (`server_environment`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ledger import SweclError

__all__ = ["ServerSpec", "parse_memory_env", "parse_memory_server", "server_environment"]

# PYTHONPYCACHEPREFIX says only where bytecode is kept, not what runs: without it a
# Python server in the sandbox (its files read-only) compiles every import at each start.
_ENV_KEPT = ("HOME", "PATH", "LANG", "LC_ALL", "LOGNAME", "USER", "SHELL", "TERM", "PYTHONPYCACHEPREFIX")

DATA = "{data}"
MODEL_GATEWAY = "{model_gateway}"
_PLACEHOLDERS = ("data", "model_gateway")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_EXAMPLE = "e.g. --memory-server 'npx -y @modelcontextprotocol/server-memory' or --memory-server http://127.0.0.1:8000/mcp"


@dataclass(frozen=True)
class ServerSpec:
    """A parsed SPEC: `argv` for a stdio server, `url` for an HTTP one; `env` the mapped
    variables, values still holding `{data}`."""

    text: str
    argv: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def transport(self) -> str:
        return "http" if self.url is not None else "stdio"

    @property
    def uses_model_gateway(self) -> bool:
        """Whether a mapped value names `{model_gateway}`: the server's model calls go through swecl."""
        return any(MODEL_GATEWAY in value for _, value in self.env)

    def env_for(self, data_dir: Path, model_gateway: str | None = None) -> dict[str, str]:
        """The mapped variables with `{data}` made the data directory, `{model_gateway}` the gateway's URL."""
        out = {name: value.replace(DATA, str(data_dir)) for name, value in self.env}
        if model_gateway is not None:
            out = {name: value.replace(MODEL_GATEWAY, model_gateway) for name, value in out.items()}
        return out

    def redacted(self) -> str:
        """SPEC as recorded: a URL without its credentials and query values (tokens ride
        there); a command line as given (secret-shaped text is scrubbed by the recorder).
        Mapped values are never part of it."""
        if self.url is None:
            return shlex.join(self.argv)
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        query = "&".join(f"{kv.split('=', 1)[0]}=REDACTED" if "=" in kv else kv for kv in parts.query.split("&") if kv)
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def parse_memory_env(items: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """`--memory-env NAME=VALUE` values, checked; `{data}` and `{model_gateway}` the placeholders."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not _NAME.match(name):
            raise SweclError(f"--memory-env {item!r} is not NAME=VALUE (e.g. MEMORY_FILE_PATH={DATA}/memory.jsonl)")
        unknown = sorted({m for m in _PLACEHOLDER.findall(value) if m not in _PLACEHOLDERS})
        if unknown:
            raise SweclError(f"--memory-env {item!r}: unknown placeholder {{{unknown[0]}}} (only {DATA}, the server's "
                             f"data directory, and {MODEL_GATEWAY}, swecl's gateway to its model API)")
        out[name] = value
    return tuple(out.items())


def parse_memory_server(text: str, env: Iterable[str] | Mapping[str, str] = ()) -> ServerSpec:
    """SPEC (and its `--memory-env` items) as a `ServerSpec`, or a one-line `SweclError`."""
    items = [f"{k}={v}" for k, v in env.items()] if isinstance(env, Mapping) else list(env)
    mapped = parse_memory_env(items)
    spec = text.strip()
    if not spec:
        raise SweclError(f"--memory-server is empty: give a command line or an http(s) URL ({_EXAMPLE})")
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", spec):
        parts = urlsplit(spec)
        if parts.scheme.lower() not in ("http", "https"):
            raise SweclError(f"--memory-server {spec!r}: a URL must be http or https (a streamable-HTTP server), not {parts.scheme}")
        try:
            host, _ = parts.hostname, parts.port
        except ValueError as exc:
            raise SweclError(f"--memory-server {spec!r} is not a valid URL: {exc}") from None
        if not host or any(c.isspace() for c in spec):
            raise SweclError(f"--memory-server {spec!r} is not a valid URL (no host, or spaces)")
        if mapped:
            raise SweclError("--memory-env maps variables of a command-line server; an HTTP server runs elsewhere")
        return ServerSpec(text=spec, url=spec)
    try:
        argv = tuple(shlex.split(spec))
    except ValueError as exc:
        raise SweclError(f"--memory-server {spec!r} cannot be split as a command line: {exc}") from None
    if not argv:
        raise SweclError(f"--memory-server is empty: give a command line or an http(s) URL ({_EXAMPLE})")
    return ServerSpec(text=spec, argv=argv, env=mapped)


def server_environment(spec: ServerSpec, data_dir: Path, environ: dict[str, str] | None = None,
                       model_gateway: str | None = None) -> dict[str, str]:
    """What a stdio server's process gets: a few neutral variables (none of swecl's keys),
    a temporary directory beside its data, the mapped ones (`model_gateway`: the gateway's URL)."""
    base = os.environ if environ is None else environ
    env = {k: base[k] for k in _ENV_KEPT if k in base}
    env["TMPDIR"] = str(data_dir.parent / "tmp")
    env.update(spec.env_for(data_dir, model_gateway))
    return env
