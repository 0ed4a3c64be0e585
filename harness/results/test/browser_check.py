#!/usr/bin/env python3
"""The HTML report in a real browser: runs a small suite (browser.toml), renders its result with
`ampbench report --html`, and opens the page in headless Chromium twice: once for a screenshot,
which must be a 1280x2000 PNG that is not blank and shows the policies' colours, and once for the
DOM, which must hold the headings, a table row per record and every chart with its points.

Standard library only. Fails, never skips, when Chromium is missing: scripts/setup installs it.
Usage: browser_check.py AMPBENCH SUITE WORKDIR (the screenshot stays in WORKDIR/report.png)."""
import html.parser
import json
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

WIDTH, HEIGHT = 1280, 2000
FP32_BLUE = (0x00, 0x72, 0xB2)  # the page's first policy colour (svg.cpp's palette)


def fail(message: str) -> None:
    sys.exit(f"browser_check: FAIL: {message}")


def run(args: list[str], ok=(0,), timeout=180) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode not in ok:
        fail(f"{' '.join(args)} exited with {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def png_pixels(path: pathlib.Path) -> tuple[int, int, list[bytes], int]:
    """The width, height, rows and bytes per pixel of an 8-bit RGB or RGBA PNG, unfiltered."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]:
            fail(f"{path}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if header is None:
        fail(f"{path}: no IHDR")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace:
        fail(f"{path}: expected 8-bit RGB(A), not interlaced; got {header}")
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + (left + previous[x]) // 2) & 255
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = previous[x], previous[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows, bpp


def check_screenshot(path: pathlib.Path) -> str:
    width, height, rows, bpp = png_pixels(path)
    if (width, height) != (WIDTH, HEIGHT):
        fail(f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    colours, inked, blue = set(), 0, 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            pixel = tuple(row[x:x + 3])
            colours.add(pixel)
            inked += pixel != (255, 255, 255)
            blue += pixel == FP32_BLUE
    share = inked / (width * height)
    if share < 0.03 or len(colours) < 50:
        fail(f"screenshot looks blank: {share:.1%} of pixels not white, {len(colours)} colours")
    if blue < 200:
        fail(f"screenshot shows {blue} pixels of the first policy's colour: charts not drawn?")
    return f"{share:.1%} of pixels inked, {len(colours)} colours, {blue} pixels of fp32's blue"


class Dom(html.parser.HTMLParser):
    """What the checks read from the dumped DOM: element counts, headings, cells and charts."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.headings: list[str] = []
        self.rows: list[tuple[str, list[str]]] = []  # (class, cells) of the table's body
        self.charts: list[dict] = []  # aria-label, polyline point counts, crosses
        self._text: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in ("h1", "h2", "h3", "td"):
            self._text = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append((a.get("class", ""), []))
        elif tag == "svg":
            self.charts.append({"title": a.get("aria-label", ""), "polylines": [], "crosses": 0})
        elif tag == "polyline" and self.charts:
            self.charts[-1]["polylines"].append(len(a.get("points", "").split()))
        elif tag == "path" and "cross" in a.get("class", "") and self.charts:
            self.charts[-1]["crosses"] += 1

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3") and self._text is not None:
            self.headings.append("".join(self._text).strip())
            self._text = None
        elif tag == "td" and self._text is not None and self.rows:
            self.rows[-1][1].append("".join(self._text).strip())
            self._text = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def check_dom(text: str, result: dict) -> str:
    dom = Dom()
    dom.feed(text)
    if dom.tags.get("script"):
        fail("the page has a <script>")
    records = result["records"]
    for heading in ["ampbench report · browser", "Suite browser · shard 0/1", "Cases",
                    "Training: train/mlp/steps=6/seed=1/batch=16", "Audit: gemm", "Audit: softmax",
                    "Time"]:
        if heading not in dom.headings:
            fail(f"no heading {heading!r} in {dom.headings}")
    if [cells[0] for _, cells in dom.rows] != [r["key"] for r in records]:
        fail(f"table rows {[cells[0] for _, cells in dom.rows]} are not the records' keys")
    for (cls, cells), record in zip(dom.rows, records):
        if cls != record["status"] or cells[2] != record["status"].upper():
            fail(f"row {cells[0]}: class {cls!r}, status {cells[2]!r}; record says {record['status']}")
    charts = {c["title"]: c for c in dom.charts}
    expected = ["mlp: training loss per step", "mlp: loss error against the reference",
                "mlp: loss scale, skipped steps marked", "gemm 16x16x64: ulp error of the outputs",
                "gemm 16x16x256: ulp error of the outputs",
                "gemm: normwise error against problem size",
                "gemm: largest error over its a-priori bound",
                "softmax 8x256: ulp error of the outputs",
                "softmax: normwise error against problem size",
                "Time per policy (stacked by op) and per training run"]
    if sorted(charts) != sorted(expected) or len(dom.charts) != len(expected):
        fail(f"charts {[c['title'] for c in dom.charts]}, expected {expected}")
    steps = len(records[-1]["detail"]["reference"]["steps"])
    loss = charts["mlp: training loss per step"]["polylines"]
    if loss != [steps] * 4:  # the reference and three policies, a point per step
        fail(f"loss curves have {loss} points, expected 4 x {steps}")
    if charts["mlp: loss scale, skipped steps marked"]["crosses"] < 2:
        fail("fp16's skipped first step is not marked on the scale chart")
    if charts["gemm: normwise error against problem size"]["polylines"] != [2, 2, 2]:
        fail("the gemm error-against-size chart lacks a line of two sizes per policy")
    return f"{len(dom.rows)} rows, {len(dom.charts)} charts, headings {len(dom.headings)}"


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ampbench, suite, work = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        fail("chromium is not installed (Debian package chromium; scripts/setup installs it)")
    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    run([ampbench, "run", suite, "--out", str(work / "result")], ok=(0, 1))
    ran = time.monotonic()
    page = work / "report.html"
    run([ampbench, "report", str(work / "result" / "result.json"), "--html", str(page)])
    shot = work / "report.png"
    shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                   f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"]
        run(browser + [f"--screenshot={shot}", page.resolve().as_uri()])
        dom = run(browser + ["--dump-dom", page.resolve().as_uri()]).stdout
    browsed = time.monotonic()
    if not shot.exists():
        fail(f"chromium wrote no screenshot {shot}")
    result = json.loads((work / "result" / "result.json").read_text(encoding="utf-8"))
    print(f"screenshot {shot}: {check_screenshot(shot)}")
    print(f"DOM: {check_dom(dom, result)}")
    end = time.monotonic()
    print(f"PASS in {end - start:.1f} s: suite {ran - start:.1f} s, report and Chromium "
          f"{browsed - ran:.1f} s, checks {end - browsed:.1f} s")


if __name__ == "__main__":
    main()
