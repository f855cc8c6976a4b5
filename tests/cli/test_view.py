"""`swecl view`: the real CLI serving a real run's ledger, asked over HTTP as a browser asks,
then driven in headless Chromium from the runs page down to a failing test and its patch."""

from __future__ import annotations

import fcntl
import hashlib
import html
import json
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from bench.processes import swecl_argv, swecl_env
from tests.report.browser import evaluate, launch, open_page, problems_of, requests_of
from tests.run.support import INICONF, REPO_ROOT, SPANS, TEXTKIT, demo_tasks, swecl, swecl_json

from .conftest import unresolved


@contextmanager
def serving(results: Path, cache: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`swecl view --port 0` on `results`; yields its base URL (from the line it prints) and
    the process. Leaving stops it with Ctrl-C (SIGINT), which must exit 0 without a traceback."""
    proc = subprocess.Popen(swecl_argv(results, "view", "--port", "0", *extra), cwd=REPO_ROOT, env=swecl_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.split("at ", 1)[1].split()[0].rstrip("/"), proc
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and err.strip() == "swecl view: stopped", err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def get(url: str, *, host: str | None = None, method: str = "GET") -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, method=method, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def get_json(url: str) -> Any:
    status, headers, body = get(url)
    assert status == 200 and headers["Content-Type"] == "application/json", (status, body)
    return json.loads(body)


def task_url(base: str, version: str, instance_id: str, pass_: str = "initial") -> str:
    return f"{base}/run/{quote(version, safe='')}/task/{quote(instance_id, safe='')}" + (
        "" if pass_ == "initial" else f"?pass={pass_}")


@pytest.fixture(scope="module")
def view(demo: Path, cache: Path) -> Iterator[str]:
    with serving(demo, cache) as (base, _proc):
        yield base


@pytest.mark.slow
def test_runs_page_lists_what_swecl_runs_lists_with_metrics(view: str, demo: Path, cache: Path) -> None:
    listed = get_json(view + "/api/runs")
    expected = swecl_json(demo, "runs", cache=cache)
    assert [{k: v for k, v in row.items() if k != "progress"} for row in listed] == expected
    cells = 3 * demo_tasks(TEXTKIT)  # initial, retest and baseline of each task
    assert listed[0]["progress"] == {"done": cells, "total": cells, "running": False, "eta_s": None, "pace_s": None}
    status, headers, page = get(view + "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    assert f'data-run="1" data-status="finished" data-done="{cells}" data-total="{cells}"' in page
    macro = swecl_json(demo, "metrics", cache=cache)["versions"][0]["macro"]
    assert f"{macro['ACC']:.3f}" in page and f"{macro['CL-Score']:.3f}" in page
    assert 'href="/run/1"' in page and f'href="/run/1/seq/{TEXTKIT}"' in page
    # a sequence by its short name, the full id in the link's title (a full id wrapped over three lines a row)
    assert f'href="/run/1/seq/{TEXTKIT}" title="{TEXTKIT}">textkit</a>' in page
    # what the run cost, beside its counts: no cost reported (not $0), its attempts and wall time
    wall = listed[0]["spend"]["wall_s"]
    assert wall > 0 and f'data-wall="{wall}"' in page and f"<span>-</span><span>{cells} att " in page


@pytest.mark.slow
def test_run_and_sequence_pages_link_every_cell_to_its_attempt(view: str, demo: Path) -> None:
    grade = unresolved(demo)
    _, _, run = get(view + "/run/1")
    for pass_ in ("retest", "baseline"):  # a(N,j) and b(j) cells open that pass's attempt
        assert f'href="/run/1/task/{quote(grade["instance_id"])}?pass={pass_}"' in run
    assert f'href="/run/1/task/{quote(grade["instance_id"])}"' in run  # the a(i,i) cell and the column head
    assert "<details class=\"visible\" data-visible>" in run and "{worktree}" in run  # what the sandbox showed
    status, _, seq = get(f"{view}/run/1/seq/{TEXTKIT}")
    assert status == 200 and seq.count('<tr data-order="') == demo_tasks(TEXTKIT)
    assert f'<tr data-order="{grade["order"]}">' in seq


@pytest.mark.slow
def test_task_page_shows_what_swecl_show_shows(view: str, demo: Path, cache: Path) -> None:
    grade = unresolved(demo)
    shown = swecl_json(demo, "show", "1", grade["instance_id"], cache=cache)
    status, _, page = get(task_url(view, "1", grade["instance_id"]))
    assert status == 200 and "NOT RESOLVED" in page
    for test in shown["tests"]:
        row = (f'data-test="{html.escape(test["name"])}" data-kind="{test["kind"]}" '
               f'data-passed="{str(test["passed"]).lower()}"')
        assert row in page
    assert shown["failing"] and page.count('data-passed="false"') == len(shown["failing"])
    for line in shown["patch"].splitlines():  # the whole patch, escaped line by line
        assert html.escape(line) in page
    assert html.escape(shown["log"].splitlines()[-1]) in page
    assert shown["recalls"] and all(f'data-item="{r["item_id"]}"' in page for r in shown["recalls"])
    assert 'data-test-content="true"' in page  # the demo's grading secrets are built in: the audit checked them
    assert html.escape(shown["transcript"].splitlines()[-1].strip()) in page
    # the raw files are `swecl show --files`'s, byte for byte
    status, headers, patch = get(task_url(view, "1", grade["instance_id"]) + "/patch.diff")
    assert status == 200 and headers["Content-Type"].startswith("text/plain") and patch == shown["patch"]
    # another pass of the same task
    retest = swecl_json(demo, "show", "1", grade["instance_id"], "--pass", "retest", cache=cache)
    status, _, page = get(task_url(view, "1", grade["instance_id"], "retest"))
    assert status == 200 and f"attempt {retest['attempt']}" in page and "<b>retest</b>" in page


@pytest.mark.slow
def test_bad_addresses_methods_and_hosts_are_refused(view: str) -> None:
    status, _, body = get(view + "/run/nope")
    assert status == 404 and "no run version &#x27;nope&#x27;" in body
    status, _, body = get(view + "/run/1/task/no-such-task")
    assert status == 404 and "no-such-task" in body
    status, _, body = get(view + "/run/1/task/1?pass=retest-9")
    assert status == 404 and "has no attempt in pass" in body
    assert get(view + "/api/nothing")[0] == 404 and get(view + "/../../etc/passwd")[0] == 404
    assert get(view + "/", method="POST")[0] == 405
    # a DNS name rebound to 127.0.0.1 does not reach the ledger
    assert get(view + "/api/head", host="attacker.example")[0] == 403
    assert get(view + "/api/head", host="localhost:" + view.rsplit(":", 1)[1])[0] == 200


@pytest.mark.slow
def test_serving_writes_nothing(demo: Path, cache: Path) -> None:
    def digest() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in demo.iterdir() if p.is_file()}

    with serving(demo, cache) as (base, _):
        before = digest()
        for path in ("/", "/api/runs", "/run/1", f"/run/1/seq/{TEXTKIT}", "/run/1/task/1", "/run/1/task/2?pass=baseline"):
            assert get(base + path)[0] == 200
        assert digest() == before


def test_no_ledger_and_a_taken_port_are_one_line_errors(tmp_path: Path, cache: Path) -> None:
    proc = swecl(tmp_path / "empty", "view", cache=cache, check=False)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "no ledger at" in proc.stderr, proc.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        results = tmp_path / "r"
        swecl(results, "init", cache=cache)
        proc = swecl(results, "view", "--port", str(port), cache=cache, check=False)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and f"port {port}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_pages_follow_a_run_appending_to_the_ledger(demo: Path, cache: Path, tmp_path: Path) -> None:
    """A second run appends while the server runs: the poll endpoint moves, the new run is
    listed, and while its lock is held (as a live run holds it) it shows as running with
    its progress and an estimate of the time left."""
    results = tmp_path / "results"
    shutil.copytree(demo, results)  # the shared run stays as it is
    total = demo_tasks(SPANS)  # the base stage runs the initial pass only
    with serving(results, cache) as (base, _):
        head = get_json(base + "/api/head")["head"]
        assert [r["version"] for r in get_json(base + "/api/runs")] == ["1"]
        # The run dies (SIGKILL) right after its third task is in the ledger.
        proc = swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--quiet", cache=cache, check=False,
                     env={"SWECL_FAILPOINTS": "task.finished:3"})
        assert proc.returncode != 0
        assert get_json(base + "/api/head")["head"] > head
        (row,) = [r for r in get_json(base + "/api/runs") if r["version"] == "2"]
        assert row["status"] == "interrupted" and row["progress"]["done"] == 3 and row["progress"]["total"] == total
        with (results / "v2" / ".run.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running `swecl run` holds
            (row,) = [r for r in get_json(base + "/api/runs") if r["version"] == "2"]
            assert row["status"] == "running" and row["progress"]["running"]
            assert row["progress"]["eta_s"] is not None and row["progress"]["eta_s"] > 0
            _, _, page = get(base + "/")
            assert f'data-run="2" data-status="running" data-done="3" data-total="{total}"' in page and " left (" in page
            _, _, run_page = get(base + "/run/2")
            assert 'data-status="running"' in run_page and f"3/{total} tasks" in run_page
        # The resumed run appends the rest; the page's poll sees the head move again.
        moved = get_json(base + "/api/head")["head"]
        swecl(results, "run", "--resume", "2", "--quiet", cache=cache)
        deadline = time.monotonic() + 10
        while get_json(base + "/api/head")["head"] == moved and time.monotonic() < deadline:
            time.sleep(0.2)
        assert get_json(base + "/api/head")["head"] > moved
        (row,) = [r for r in get_json(base + "/api/runs") if r["version"] == "2"]
        assert row["status"] == "finished" and row["progress"]["done"] == row["progress"]["total"] == total


def test_hostile_ledger_text_stays_text(tmp_path: Path) -> None:
    """Titles, queries and ids with markup in them (the report's realistic ledger) are escaped on every page."""
    from projections import Results
    from projections.view import View
    from tests.report.realistic import HOSTILE_QUERY, SCRIPT_TITLE, build_realistic

    realistic = build_realistic(tmp_path / "results")
    view = View(Results(realistic.root))
    pages = ["/"]
    for row in json.loads(view.respond("/api/runs").body):
        pages.append(f"/run/{quote(row['version'], safe='')}")
        pages += [f"/run/{quote(row['version'], safe='')}/seq/{quote(s, safe='')}" for s in row["sequences"]]
    bodies = [view.respond(p).body.decode() for p in pages]
    tasks = sorted({html.unescape(link) for body in bodies for link in re.findall(r'href="(/run/[^"]*/task/[^"]*)"', body)})
    assert tasks
    for link in tasks:
        response = view.respond(link)
        assert response.status == 200, (link, response.body[:300])
        bodies.append(response.body.decode())
    for body in bodies:
        assert SCRIPT_TITLE not in body and HOSTILE_QUERY not in body and "<script>" not in body
    assert any(html.escape(SCRIPT_TITLE) in b for b in bodies), "no page showed the hostile title at all"


HEADLINE = ("ACC", "F", "FWT", "CL-Score")


@pytest.fixture(scope="module")
def several(demo: Path, cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo run (memory on, every pass) and run 2 beside it: the base stage (memory off,
    the initial pass only) over two more sequences, killed (SIGKILL) after its third task.
    A test that holds its lock (as a live `swecl run` does) sees it running."""
    results = tmp_path_factory.mktemp("several") / "results"
    shutil.copytree(demo, results)
    proc = swecl(results, "run", "--stage", "base", "--sequence", SPANS, "--sequence", INICONF, "--quiet", cache=cache,
                 check=False, env={"SWECL_FAILPOINTS": "task.finished:3"})
    assert proc.returncode != 0
    return results


# Per run row of the runs page: the cells right of its progress that carry a metric, and
# where things are on the screen.
_RUNS_LAYOUT = """JSON.stringify({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
    table: document.querySelector('table.runs').getBoundingClientRect().right,
    rows: [...document.querySelectorAll('table.runs tr[data-run]')].map(tr => {
        const progress = tr.querySelector('td.progress-cell');
        const metrics = [];
        for (let td = progress.nextElementSibling; td && td.dataset.metric; td = td.nextElementSibling)
            metrics.push([td.dataset.metric, td.textContent.trim()]);
        return {
            run: tr.dataset.run,
            progress: progress.innerText,
            metrics,
            right: Math.max(...[...tr.cells].map(td => td.getBoundingClientRect().right)),
            links: [...tr.querySelectorAll('a')].map(a => a.getAttribute('href')),
            text: tr.innerText + ' ' + [...tr.querySelectorAll('[title]')].map(e => e.title).join(' '),
        };
    }),
})"""


@pytest.mark.slow
def test_runs_page_fits_1280_pixels_with_each_runs_headline_metrics_beside_its_progress(
    several: Path, cache: Path, chromium: str, tmp_path: Path
) -> None:
    """The front page at 1280x800, with a finished memory-on run and a running base run over
    two long-named sequences: no sideways scrolling, and each run's macro ACC, F, FWT and
    CL-Score (n/a where its passes did not measure it) right after its progress."""
    measured = {v["version"]: v for v in swecl_json(several, "metrics", cache=cache)["versions"]}
    assert measured["2"]["macro"]["F"] is None and measured["2"]["macro"]["FWT"] is None  # no re-test, no baseline
    with serving(several, cache) as (base, _), (several / "v2" / ".run.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running `swecl run` holds
        listed = {row["version"]: row for row in get_json(base + "/api/runs")}
        with launch(chromium, tmp_path / "chromium") as browser:
            cdp = browser.cdp
            session = open_page(cdp, base + "/", width=1280, height=800).session
            seen = json.loads(evaluate(cdp, session, _RUNS_LAYOUT))
            problems = problems_of(cdp, session)
    widths = {k: seen[k] for k in ("scroll", "client", "table")}
    assert seen["client"] <= 1280 and seen["scroll"] <= seen["client"], widths  # no horizontal scroll
    assert seen["table"] <= seen["client"], widths
    assert listed["2"]["status"] == "running" and listed["1"]["status"] == "finished"
    assert sorted(row["run"] for row in seen["rows"]) == sorted(listed) == ["1", "2"]
    for row in seen["rows"]:
        version = row["run"]
        macro, unmeasured = measured[version]["macro"], measured[version]["unmeasured"]
        expected = [[m, "n/a" if macro[m] is None or m in unmeasured else f"{macro[m]:.3f}"]
                    for m in (*HEADLINE, "AULC")]
        assert row["metrics"] == expected, (version, row)
        assert row["right"] <= seen["client"], (version, row["right"], widths)
        progress = listed[version]["progress"]
        assert f"{progress['done']}/{progress['total']} tasks" in row["progress"]
        # What the row said before it had to fit stays on the page (as text or a title).
        for sequence_id in listed[version]["sequences"]:
            assert f"/run/{version}/seq/{sequence_id}" in row["links"], (version, sequence_id)
            assert sequence_id in row["text"]
        for fact in (listed[version]["stage"], listed[version]["agent"], listed[version]["status"],
                     listed[version]["started_at"][:10]):
            assert fact in row["text"], (version, fact)
    by_run = {row["run"]: row for row in seen["rows"]}
    assert by_run["1"]["metrics"][0][1] != "n/a" and by_run["1"]["metrics"][3][1] != "n/a"  # ACC, CL-Score measured
    assert dict(by_run["2"]["metrics"])["F"] == dict(by_run["2"]["metrics"])["FWT"] == "n/a"
    assert " left (" in by_run["2"]["progress"] or "estimating" in by_run["2"]["progress"]
    assert problems == [], "\n".join(problems)


def _click(cdp: Any, session: str, selector: str) -> None:
    """Click the first element `selector` finds and wait for the page it opens to load."""
    cdp.events.clear()
    assert evaluate(cdp, session, f"(() => {{ const a = document.querySelector({json.dumps(selector)}); "
                                  "if (!a) return false; a.click(); return true; })()"), selector
    cdp.wait_for("Page.loadEventFired", session=session, timeout=30)


@pytest.mark.slow
def test_a_browser_clicks_from_the_runs_page_to_a_failing_test_and_its_patch(
    view: str, demo: Path, cache: Path, chromium: str, tmp_path: Path
) -> None:
    grade = unresolved(demo)
    shown = swecl_json(demo, "show", "1", grade["instance_id"], cache=cache)
    with launch(chromium, tmp_path / "chromium") as browser:
        cdp = browser.cdp
        load = open_page(cdp, view + "/")
        session = load.session
        _click(cdp, session, 'tr[data-run="1"] td a[href="/run/1"]')
        assert evaluate(cdp, session, "location.pathname") == "/run/1"
        _click(cdp, session, f'h2 a[href="/run/1/seq/{TEXTKIT}"]')
        _click(cdp, session, f'tr[data-order="{grade["order"]}"] td.iid a')
        facts = json.loads(evaluate(cdp, session, """JSON.stringify({
            path: location.pathname,
            failing: [...document.querySelectorAll('tr[data-test][data-passed="false"]')]
                .map(tr => [tr.dataset.kind, tr.dataset.test]),
            patch: document.querySelector('pre.patch').innerText,
            text: document.body.innerText,
        })"""))
        time.sleep(2.5)  # one poll of /api/head by the page's script
        live = evaluate(cdp, session, "document.getElementById('live').textContent")
        problems = problems_of(cdp, session)
    assert facts["path"] == f"/run/1/task/{grade['instance_id']}"
    failing = {t["name"]: t["kind"] for t in shown["tests"] if not t["passed"]}
    assert sorted(name for _, name in facts["failing"]) == sorted(failing) and failing
    assert all(kind == failing[name] for kind, name in facts["failing"])
    assert facts["patch"].strip() == shown["patch"].strip()
    assert "NOT RESOLVED" in facts["text"]
    assert live.startswith("live · ledger seq"), live
    assert problems == [], "\n".join(problems)  # no console error, no CSP violation, no failed request


def test_sse_stream_pushes_the_head_when_the_ledger_moves(tmp_path: Path, cache: Path) -> None:
    """`/api/events` over real HTTP: the head at once, then again after an append, nothing in between."""
    from bench.ledgers import LedgerBuilder
    from ledger import Ledger
    from tests.report.realistic import build_realistic

    root = tmp_path / "results"
    build_realistic(root)
    with serving(root, cache) as (base, _):
        with urllib.request.urlopen(base + "/api/events", timeout=30) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            assert stream.readline() == b"retry: 2000\n" and stream.readline() == b"\n"
            first = _sse_event(stream)
            b = LedgerBuilder(Ledger.open(root / "ledger.db"))
            try:
                b.start_run("pushed", stage="base", plan={})
                moved = b.ledger.head()  # type: ignore[union-attr]
            finally:
                b.close()
            second = _sse_event(stream)
    assert first[0] == "head" and second[0] == "head"
    assert second[1]["head"] == moved > first[1]["head"] and second[1]["ledger_id"] == first[1]["ledger_id"]


def _sse_event(stream: Any) -> tuple[str, Any]:
    """The next event of a Server-Sent Events stream (comments skipped): (name, decoded data)."""
    name, data = "message", None
    while True:
        line = stream.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
        elif line == "" and data is not None:
            return name, data


@pytest.mark.slow
def test_an_open_page_is_redrawn_by_push_not_by_polling(tmp_path: Path, cache: Path, chromium: str) -> None:
    """The runs page open in Chromium while a run starts and works: the page learns it from
    `/api/events` and redraws itself with the new run; it never asks `/api/head` meanwhile."""
    from bench.ledgers import LedgerBuilder
    from ledger import Ledger
    from tests.report.realistic import DJANGO, PLAN, build_realistic

    root = tmp_path / "results"
    build_realistic(root)
    with serving(root, cache) as (base, _), launch(chromium, tmp_path / "chromium") as browser:
        cdp = browser.cdp
        load = open_page(cdp, base + "/")
        session = load.session
        assert evaluate(cdp, session, "document.querySelectorAll('tr[data-run=\"pushed\"]').length") == 0
        b = LedgerBuilder(Ledger.open(root / "ledger.db"))
        try:
            b.start_run("pushed", stage="plugin-blank", plan={DJANGO: PLAN[DJANGO]})
            b.pass_mark("pushed", DJANGO, "initial", "started")
            b.task("pushed", DJANGO, 1, status="resolved")
            head = b.ledger.head()  # type: ignore[union-attr]
        finally:
            b.close()
        row, live = None, ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            row = evaluate(cdp, session, "(() => { const r = document.querySelector('tr[data-run=\"pushed\"]'); "
                                         "return r && [r.dataset.done, r.dataset.total]; })()")
            live = evaluate(cdp, session, "document.getElementById('live').textContent")
            if row:
                break
            time.sleep(0.2)
        shown_head = evaluate(cdp, session, "document.body.dataset.head")
        requests = requests_of(cdp, session)
        problems = problems_of(cdp, session)
    assert row == ["1", "15"], (row, live)  # django's 5 tasks x initial, retest and baseline
    assert shown_head == str(head) and "pushed" in live, live
    assert base + "/api/events" in requests
    assert not [u for u in requests if u.endswith("/api/head")], requests  # the push did it; no poll was needed
    assert problems == [], "\n".join(problems)
