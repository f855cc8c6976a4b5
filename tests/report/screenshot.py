"""The report's first screen as a PNG, as docs/report.png shows it (docs/commands.md).

    ./dev python -m tests.report.screenshot REPORT_DIR OUT.png [--width 1280 --height 800]

Opens REPORT_DIR/index.html in headless Chromium (the browser tests' harness: installed
when missing, as root) at the given viewport and captures that viewport only, every
`<details>` left as the page opens. Prints the page's height in CSS pixels.
"""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from .browser import ensure_chromium, evaluate, launch, open_page


def first_screen(report_dir: Path, out: Path, *, width: int = 1280, height: int = 800) -> int:
    """Write the first `width` x `height` screen of the report to `out`; the page's height."""
    chromium, why = ensure_chromium()
    if chromium is None:
        raise SystemExit(f"no headless Chromium: {why}")
    with tempfile.TemporaryDirectory() as work, launch(chromium, Path(work)) as browser:
        load = open_page(browser.cdp, (report_dir / "index.html").resolve().as_uri(), width=width, height=height)
        if load.problems:
            raise SystemExit("the page did not load clean:\n" + "\n".join(load.problems))
        page_height = int(evaluate(browser.cdp, load.session, "document.scrollingElement.scrollHeight"))
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        data = browser.cdp.send("Page.captureScreenshot", {"format": "png", "clip": clip},
                                session=load.session, timeout=60)["data"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(data))
    return page_height


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report_dir", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    args = parser.parse_args()
    page_height = first_screen(args.report_dir, args.out, width=args.width, height=args.height)
    print(f"wrote {args.out} ({args.width}x{args.height}); the page is {page_height} px tall at {args.width} wide")


if __name__ == "__main__":
    main()
