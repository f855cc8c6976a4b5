"""swecl's results channel (written by swecl for one test run; not part of the repository)."""
# This file is what runs in the test environment, not a module of swecl: graders._results_plugin
# copies it, as it is, beside the run's results file (`ResultsChannel.prepare`), and the test
# command loads it with `-p swecl_results_channel` from PYTHONPATH. swecl never imports it:
# the import would take the channel's variable out of os.environ, replace the import
# system's path hook and take a sys.monitoring tool id in swecl's own process. Its folder has
# no __init__.py, so nothing walks into it as a module of graders (pkgutil.walk_packages).
#
# Kept to the Python (3.5) and pytest of the oldest SWE-bench environments: no f-strings,
# no annotations, no `from __future__ import annotations`. It never raises: a channel that
# cannot be written is simply empty.
import json
import os
import sys
import types

import pytest

# Taken now, before any code under test is imported: later changes to these names do not
# reach what this module records.
_os_write = os.write
_dumps = json.dumps
_settrace = sys.settrace
_gettrace = sys.gettrace
_CodeType = types.CodeType
_SKIP = getattr(getattr(pytest, "skip", None), "Exception", None)
_XFAIL = getattr(getattr(pytest, "xfail", None), "Exception", None)
_HOOKIMPL = getattr(pytest, "hookimpl", None)
_ROOT = os.path.realpath(os.getcwd())  # the worktree: the test command runs in it


def _open():
    path = os.environ.pop("SWECL_RESULTS_CHANNEL", None)  # gone before any test code runs
    if not path:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return None


_FD = _open()


def _write(record):
    if _FD is None:
        return
    try:
        _os_write(_FD, (_dumps(record, sort_keys=True) + "\n").encode("utf-8"))
    except Exception:
        pass


def _in_worktree(path):
    try:
        where = os.path.realpath(path)
    except Exception:
        return True
    return where == _ROOT or where.startswith(_ROOT + os.sep)


# -- no bytecode from the worktree -------------------------------------------------------

def _guard_bytecode():
    """Imports from the worktree compile the source: a .pyc there (in __pycache__, or a
    sourceless one beside where a module's source would be) is never loaded."""
    try:
        from importlib import machinery

        class SourceOnly(machinery.SourceFileLoader):
            def get_data(self, path):
                # the module's source decides, not where the cache is (PYTHONPYCACHEPREFIX)
                if path.endswith((".pyc", ".pyo")) and _in_worktree(self.path):
                    raise OSError("swecl: bytecode in the worktree is not loaded")
                return super(SourceOnly, self).get_data(path)

        source = [(machinery.ExtensionFileLoader, list(machinery.EXTENSION_SUFFIXES)),
                  (SourceOnly, list(machinery.SOURCE_SUFFIXES))]
        compiled = [(machinery.SourcelessFileLoader, list(machinery.BYTECODE_SUFFIXES))]
        worktree_hook = machinery.FileFinder.path_hook(*source)
        other_hook = machinery.FileFinder.path_hook(*(source + compiled))

        def swecl_path_hook(path):
            if _in_worktree(path or "."):
                return worktree_hook(path)
            return other_hook(path)

        hooks = sys.path_hooks
        for i, hook in enumerate(list(hooks)):
            if "FileFinder" in getattr(hook, "__qualname__", ""):
                hooks[i] = swecl_path_hook
                break
        else:
            hooks.append(swecl_path_hook)
        sys.path_importer_cache.clear()
    except Exception:
        pass
    try:  # pytest's assertion rewriting keeps a bytecode cache of its own
        from _pytest.assertion import rewrite

        read_pyc = getattr(rewrite, "_read_pyc", None)
        if read_pyc is not None:
            def _read_pyc(source, pyc, *args, **kwargs):
                if _in_worktree(str(source)) or _in_worktree(str(pyc)):
                    return None
                return read_pyc(source, pyc, *args, **kwargs)
            rewrite._read_pyc = _read_pyc
    except Exception:
        pass


_guard_bytecode()


# -- evidence of each test's own run -----------------------------------------------------

def _kind(exc_type):
    """What an exception that ended a phase means: skip, xfail or fail."""
    try:
        if _XFAIL is not None and issubclass(exc_type, _XFAIL):
            return "xfail"
        if _SKIP is not None and issubclass(exc_type, _SKIP):
            return "skip"
        unittest = sys.modules.get("unittest")
        if unittest is not None and issubclass(exc_type, unittest.SkipTest):
            return "skip"
    except Exception:
        pass
    return "fail"


def _ended_by(outcome, item):
    """(kind, exception type name) of the exception that ended the phase, or (None, None)."""
    exc_type = None
    try:
        excinfo = outcome.excinfo
        if excinfo:
            exc_type = excinfo[0]
    except Exception:
        pass
    if exc_type is None and item is not None:
        try:  # a unittest TestCase: its result object keeps what the test raised
            kept = item.__dict__.get("_excinfo")
            if kept:
                exc_type = kept[0].type
        except Exception:
            pass
    if exc_type is None:
        return None, None
    return _kind(exc_type), getattr(exc_type, "__name__", "?")


def _codes(item):
    """The code objects of the function pytest calls for `item`, outermost first, and of
    what it wraps (functools.wraps, mock.patch): decorators do not hide the test's code."""
    codes = []
    try:
        obj = item.__dict__.get("obj") or getattr(item, "obj", None)
    except Exception:
        return codes
    for _ in range(16):
        if obj is None:
            break
        func = getattr(obj, "__func__", obj)
        code = getattr(func, "__code__", None)
        if not isinstance(code, _CodeType):
            inner = getattr(func, "func", None)  # functools.partial
            if inner is None or inner is obj:
                break
            obj = inner
            continue
        if all(code is not c for c in codes):
            codes.append(code)
        obj = getattr(func, "__wrapped__", None)
    return codes


_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


class _Watch(object):
    """Whether one of `codes` started during the call, and (Python 3.12+) whether the
    outermost one ended by an exception."""

    def __init__(self, codes):
        self.codes = codes
        self.ids = set(id(c) for c in codes)
        self.ran = False
        self.unwound = None
        self.depth = 0
        self.previous = None
        self.tracing = False

    def start(self):
        if not self.codes:
            return
        if _MON is not None and _TOOL is not None:
            _WATCHES.append(self)
            events = _MON.events
            outer = self.codes[0]
            if not (outer.co_flags & _GENERATOR_FLAGS):
                self.unwound = False
            for code in self.codes:
                _MON.set_local_events(_TOOL, code, events.PY_START | (events.PY_RETURN if code is outer else 0))
            _MON.set_events(_TOOL, events.PY_UNWIND)
            return
        self.previous = _gettrace()
        self.tracing = True
        _settrace(self.trace)

    def trace(self, frame, event, arg):
        if event == "call" and id(frame.f_code) in self.ids:
            self.ran = True
            self.stop_tracing()
        if self.previous is not None:
            return self.previous(frame, event, arg)
        return None

    def stop_tracing(self):
        if self.tracing:
            self.tracing = False
            _settrace(self.previous)

    def stop(self):
        if _MON is not None and _TOOL is not None and self in _WATCHES:
            _WATCHES.remove(self)
            _MON.set_events(_TOOL, 0)
            for code in self.codes:
                _MON.set_local_events(_TOOL, code, 0)
        self.stop_tracing()


_MON = getattr(sys, "monitoring", None)
_TOOL = None
_WATCHES = []


def _on_start(code, offset):
    for watch in _WATCHES:
        if id(code) in watch.ids:
            watch.ran = True
            if code is watch.codes[0]:
                watch.depth += 1


def _on_return(code, offset, value):
    for watch in _WATCHES:
        if code is watch.codes[0] and watch.depth > 0:
            watch.depth -= 1


def _on_unwind(code, offset, exc):
    for watch in _WATCHES:
        if code is watch.codes[0] and watch.depth > 0:
            watch.depth -= 1
            if watch.depth == 0 and watch.unwound is not None and not isinstance(exc, GeneratorExit):
                watch.unwound = type(exc).__name__


if _MON is not None:
    for _id in (4, 3, 5, 2, 1, 0):
        try:
            _MON.use_tool_id(_id, "swecl-results-channel")
        except Exception:
            continue
        _TOOL = _id
        break
    if _TOOL is not None:
        try:
            _MON.register_callback(_TOOL, _MON.events.PY_START, _on_start)
            _MON.register_callback(_TOOL, _MON.events.PY_RETURN, _on_return)
            _MON.register_callback(_TOOL, _MON.events.PY_UNWIND, _on_unwind)
        except Exception:
            _TOOL = None


def _nodeid(item):
    try:
        return str(item.nodeid)
    except Exception:
        return None


def _xfail_marked(item):
    try:
        return "xfail" in item.keywords
    except Exception:
        return False


def _phase(name):
    def wrapper(item):
        watch = None
        if name == "call":
            try:
                watch = _Watch(_codes(item))
                watch.start()
            except Exception:
                watch = None
        outcome = yield
        try:
            if watch is not None:
                watch.stop()
            kind, exc = _ended_by(outcome, item if name == "call" else None)
            record = {"evidence": name, "nodeid": _nodeid(item), "exc": kind, "exc_type": exc}
            if name == "call":
                record["ran"] = (watch.ran if watch.codes else None) if watch is not None else False
                record["unwound"] = watch.unwound if watch is not None else None
                record["xfail_mark"] = _xfail_marked(item)
            _write(record)
        except Exception:
            pass
    wrapper.__name__ = "pytest_runtest_" + name
    # innermost of the wrappers (trylast, and registered before any conftest or plugin of
    # the repository): what the test raised reaches it before anyone else's wrapper
    if _HOOKIMPL is not None:
        return _HOOKIMPL(hookwrapper=True, trylast=True)(wrapper)
    wrapper.hookwrapper = True
    wrapper.trylast = True
    return wrapper


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


def pytest_configure(config):
    _write({"event": "start", "evidence": True, "monitoring": _TOOL is not None})


def pytest_runtest_logreport(report):
    try:
        _write({
            "nodeid": str(report.nodeid), "when": str(getattr(report, "when", "")),
            "outcome": str(report.outcome), "xfail": hasattr(report, "wasxfail"),
        })
    except Exception:
        pass


def pytest_sessionfinish(session, exitstatus):
    try:
        _write({"event": "finish", "exitstatus": int(exitstatus)})
    except Exception:
        _write({"event": "finish", "exitstatus": None})
