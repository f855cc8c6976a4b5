"""`swecl run --resume V` of a `--memory-server` run: its server from the recorded options,
the mapped variables' values from the resuming command line.

A run records its server's spec (a URL without its credentials and query values) and of
`--memory-env NAME=VALUE` only the names: a value may be a token. The resume takes the
spec and the templates from the run's options and asks the values again
(`--resume V --memory-env NAME=VALUE ...`), the same names as recorded, no more, no
fewer (a preset's own variables, `memory_preset`, come from the preset again). A URL the ledger keeps redacted is given again with `--memory-server URL`, which
must redact to the recorded form (the same server). Where the server starts is the
sequence's business (`SequenceServers`: the last snapshot); which tasks run again,
`_sequence._reopen_server_failures`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ledger import SweclError

from ._presets import get_preset
from ._server_spec import parse_memory_server

__all__ = ["resume_memory_options"]


def resume_memory_options(opts: Any, config: dict[str, Any], version: str, overrides: Any) -> Any:
    """`opts` (read from run `version`'s `config`) with what a resume gives of the memory's
    options (`ResumeOverrides`: a memory server and its mapped values, never recorded), or
    the one-line refusal."""
    memory_server, memory_env = overrides.memory_server, list(overrides.memory_env)
    recorded = config.get("memory_server")
    if not recorded:
        given = "--memory-server" if memory_server is not None else "--memory-env" if memory_env else None
        if given:
            raise SweclError(f"run {version} used no --memory-server: drop {given} (a resume keeps its own memory)")
        return opts
    preset = get_preset(str(config.get("memory_preset") or ""))
    if preset is not None:
        # A preset's own variables are no secret: the resume takes them from it again,
        # and asks only for what the user gave (its `needs`, and any of theirs).
        given = {item.partition("=")[0] for item in memory_env}
        memory_env = [f"{k}={v}" for k, v in preset.env if k not in given] + memory_env
        if memory_server is not None and get_preset(memory_server) is preset:
            memory_server = None  # the preset by name: the command it recorded
    names = [item.partition("=")[0] for item in memory_env]
    recorded_names = list(config.get("memory_env_names") or [])
    missing = [n for n in recorded_names if n not in names]
    extra = [n for n in names if n not in recorded_names]
    if missing or extra:
        said = "; ".join(part for part in (
            f"give --memory-env {', '.join(n + '=VALUE' for n in missing)} again (values are never recorded)"
            if missing else "",
            f"drop --memory-env {', '.join(extra)} (the run did not map {'them' if len(extra) > 1 else 'it'})"
            if extra else "") if part)
        raise SweclError(f"run {version}'s memory server maps {', '.join(recorded_names) or 'no variables'}: {said}")
    spec = str(recorded)
    if memory_server is not None:
        given = parse_memory_server(memory_server, memory_env)
        if given.redacted() != spec:
            raise SweclError(f"--memory-server {given.redacted()!r} is not run {version}'s server ({spec!r}): "
                             "a resume continues with the same server")
        spec = memory_server
    elif config.get("memory_server_redacted"):
        raise SweclError(f"run {version}'s memory server URL is recorded without its credentials ({spec!r}): "
                         "give it again with --memory-server URL")
    resumed = msgspec.structs.replace(opts, memory=msgspec.structs.replace(opts.memory, server=spec,
                                                                          env=list(memory_env)))
    resumed.validate()  # the spec and the values parsed
    return resumed
