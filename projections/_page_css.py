"""The look the HTML pages share (the report, the leaderboard): fonts, colours, headings,
tables, folds. Below both packages, so neither imports the other for it; each adds its own
rules after these."""

PAGE_CSS = """
:root { color-scheme: light; --ok: #2c7fb8; --no: #f4a261; --ink: #1d1d1f; --mute: #666; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink);
       margin: 0 auto; padding: 1.5rem 2rem 4rem; max-width: 1400px; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #ddd; padding-bottom: .2rem; }
.meta, .note { color: var(--mute); font-size: .86rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .86rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .88rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .3rem 0 1rem; } summary { cursor: pointer; color: #333; }
"""
