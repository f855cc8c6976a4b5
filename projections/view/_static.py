"""The view's two static files: its stylesheet (the report's, plus what a drill-down page
needs) and its one script, which keeps a page live (see `SCRIPT`)."""

from __future__ import annotations

from projections.report.present import CSS as REPORT_CSS

CSS = REPORT_CSS + """
header.bar { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: baseline; border-bottom: 1px solid #ddd;
             padding-bottom: .4rem; margin-bottom: 1rem; }
header.bar .brand { font-weight: 700; text-decoration: none; color: var(--ink); }
header.bar nav.crumbs a { margin-right: .2rem; } header.bar nav.crumbs span.sep { color: #bbb; margin: 0 .3rem; }
#live { margin-left: auto; color: var(--mute); font-size: .8rem; }
#live.stale { color: #a33; } #live.fresh { color: #2c7a2c; }
a.cell { display: block; color: inherit; text-decoration: none; } a.cell:hover { outline: 2px solid #333; }
td.cell-resolved a.cell { color: #fff; }
progress { width: 9rem; vertical-align: middle; }
table.runs { width: 100%; } table.runs td.ids { overflow-wrap: anywhere; } table.runs td.stage { overflow-wrap: normal; white-space: nowrap; }
table.runs td.num, table.runs td.started, table.runs td.passes { white-space: nowrap; }
table.runs td.progress-cell { width: 14rem; } table.runs progress { width: 100%; max-width: 7rem; }
.progress .count { white-space: nowrap; }
table.runs td.seqs a, table.runs td.passes span { display: block; }
table.runs .sub { display: block; color: var(--mute); font-size: .8rem; } main p code { overflow-wrap: anywhere; }
pre { background: #fafafa; border: 1px solid #e6e6e6; padding: .5rem .7rem; overflow: auto; max-height: 36rem;
      font: .8rem/1.35 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre; }
pre.wrap { white-space: pre-wrap; word-break: break-word; }
pre.patch .add { color: #116329; background: #e6ffec; } pre.patch .del { color: #82071e; background: #ffebe9; }
pre.patch .hunk { color: #0550ae; } pre.patch .file { font-weight: 700; }
.verdict { font-size: 1.1rem; font-weight: 700; } .verdict.yes { color: #116329; } .verdict.no { color: #a33; }
tr.fail td.mark { color: #a33; font-weight: 700; } tr.ok td.mark { color: #116329; }
tr.excluded { color: #999; }
.flag { display: inline-block; background: #ffebe9; color: #82071e; border: 1px solid #f5c2c0; border-radius: 3px;
        padding: 0 .3rem; margin: 0 .2rem .1rem 0; font-size: .78rem; }
.passes a, .passes b { margin-right: .6rem; }
.turn { border-left: 3px solid #e6e6e6; padding: .1rem .6rem; margin: .3rem 0; }
.turn.assistant { border-color: #2c7fb8; } .turn.user { border-color: #f4a261; } .turn.result { border-color: #2c7a2c; }
.turn .who { font-weight: 600; font-size: .8rem; color: var(--mute); }
.turn pre { max-height: 16rem; margin: .2rem 0; }
.error { color: #a33; }
"""

SCRIPT = """\
// swecl view: keeps the page live. The server pushes the ledger's last global position
// (Server-Sent Events from /api/events) as soon as it moves; when a push is not to be had
// (no EventSource, or the stream is down), it is polled from /api/head every 2 s instead.
// When it moved, the page fetches itself again and swaps its <main> in (folded sections
// keep their state). Nothing else runs here; pages work without it.
(() => {
  const live = document.getElementById('live');
  let head = document.body.dataset.head;
  let wanted = head;
  let busy = false;
  let pushed = false;
  const say = (text, cls) => { if (live) { live.textContent = text; live.className = cls; } };
  async function redraw() {
    const page = await fetch(location.href, { cache: 'no-store' });
    if (!page.ok) throw new Error('HTTP ' + page.status);
    const doc = new DOMParser().parseFromString(await page.text(), 'text/html');
    const fresh = doc.getElementById('main');
    const old = document.getElementById('main');
    if (!fresh || !old) return;
    const open = new Map([...old.querySelectorAll('details[data-key]')].map(d => [d.dataset.key, d.open]));
    fresh.querySelectorAll('details[data-key]').forEach(d => {
      if (open.has(d.dataset.key)) d.open = open.get(d.dataset.key);
    });
    old.replaceWith(document.adoptNode(fresh));
    head = doc.body.dataset.head || wanted;
    document.body.dataset.head = head;
    document.title = doc.title;
  }
  // `now`: the head just learned. A push that comes while a redraw is under way is kept in
  // `wanted` and drawn after it, never dropped.
  async function follow(now, how) {
    wanted = now;
    if (busy) return;
    busy = true;
    try {
      let drawn = false;
      for (let i = 0; i < 3 && wanted !== head; i++) {
        const before = head;
        await redraw();
        drawn = true;
        if (head === before) break;
      }
      say('live · ledger seq ' + head + ' · ' + how + (drawn ? ' · updated ' + new Date().toLocaleTimeString() : ''),
          drawn ? 'fresh' : '');
    } catch (e) {
      say('not live: ' + e.message, 'stale');
    } finally {
      busy = false;
    }
  }
  async function poll() {
    if (pushed || busy || document.hidden) return;
    try {
      const r = await fetch('/api/head', { cache: 'no-store' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      await follow(String((await r.json()).head), 'polled');
    } catch (e) {
      say('not live: ' + e.message, 'stale');
    }
  }
  if (window.EventSource) {
    const stream = new EventSource('/api/events');
    stream.addEventListener('head', e => { pushed = true; follow(String(JSON.parse(e.data).head), 'pushed'); });
    stream.addEventListener('error', () => { pushed = false; });  // it reconnects by itself; polled meanwhile
    window.addEventListener('pagehide', () => stream.close());
  }
  setInterval(poll, 2000);
})();
"""
