# tests/browser.py: opening an HTML report in a real headless browser (Debian's Chromium)
# for the report tests: the page is loaded with a small probe added (it records script
# errors, console errors and resources that failed, and counts images that decoded and
# tables), the rendered page is read back (--dump-dom), and a screenshot is kept with the
# test's output: $ISTHMUS_TEST_ARTIFACTS, else <repo>/Testing/screenshots.
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--disable-extensions", "--disable-sync", "--no-default-browser-check"]
HEAD = ("<script>window.__errs=[];window.addEventListener('error',function(e){"
        "__errs.push(e.message?String(e.message):'resource failed: '+((e.target&&"
        "(e.target.src||e.target.href))||'?').slice(0,80))},true);(function(){var c=console.error;"
        "console.error=function(){__errs.push([].join.call(arguments,' '));c.apply(console,"
        "arguments)}})();</script>")
TAIL = ("<script>window.addEventListener('load',function(){var im=[].slice.call(document.images);"
        "var r={images:im.length,broken:im.filter(function(i){return!(i.complete&&i.naturalWidth>0)"
        "}).length,tables:document.querySelectorAll('table').length,rows:document.querySelectorAll("
        "'tr').length,svgs:document.querySelectorAll('svg').length,errors:window.__errs};"
        "var p=document.createElement('pre');p.id='isthmus-render-check';p.textContent="
        "JSON.stringify(r);document.body.appendChild(p)})</script>")
CHECK = re.compile(r'<pre id="isthmus-render-check">(.*?)</pre>', re.S)


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        msg = "Chromium is not installed (apt install chromium; scripts/bootstrap.sh does)"
        if os.environ.get("ISTHMUS_REQUIRE_NATIVE"):
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def artifacts() -> Path:
    d = Path(os.environ.get("ISTHMUS_TEST_ARTIFACTS", REPO / "Testing" / "screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def render(page: Path, name: str, tmp: Path) -> dict:
    """What the browser made of page: its probe's counts and errors. A screenshot is
    written to artifacts()/<name>.png."""
    exe = chromium()
    html = page.read_text()
    probed = tmp / f"{name}-probed.html"
    html = html.replace("<head>", "<head>" + HEAD, 1) if "<head>" in html else HEAD + html
    probed.write_text(html.replace("</body>", TAIL + "</body>", 1) if "</body>" in html
                      else html + TAIL)
    profile = tmp / f"{name}-profile"
    common = FLAGS + [f"--user-data-dir={profile}", "--virtual-time-budget=10000"]
    r = subprocess.run([exe, *common, "--dump-dom", probed.as_uri()], capture_output=True,
                       text=True, timeout=120)
    m = CHECK.search(r.stdout)
    assert m, f"the browser did not run the page's probe (exit {r.returncode}): {r.stderr[-1500:]}"
    result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    shot = artifacts() / f"{name}.png"
    s = subprocess.run([exe, *common, "--window-size=1280,2000", f"--screenshot={shot}",
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 0, s.stderr[-1500:]
    result["screenshot"] = str(shot)
    return result
