#!/usr/bin/env python3
"""The HTML report in a real browser: runs a small suite (browser.toml), renders its result with
`ampbench report --html`, and opens the page in headless Chromium twice: once for a screenshot,
which must be a 1280x2000 PNG that is not blank and shows the policies' colours, and once for the
DOM, which must hold the headings, a table row per record and every chart with its points. Then
the device comparison page (`ampbench report R1 R2 ...`): the real record beside itself
(--side-by-side), and beside two records built here from it for two made-up GPUs (named as test
fixtures in their data), each checked the same way: a screenshot that is not blank, every chart,
a table row per case and device.

Standard library only. Fails, never skips, when Chromium is missing: scripts/setup installs it.
Usage: browser_check.py AMPBENCH SUITE WORKDIR (the screenshots stay in WORKDIR/*.png)."""
import copy
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


def check_screenshot(path: pathlib.Path, first_colour=FP32_BLUE) -> str:
    width, height, rows, bpp = png_pixels(path)
    if (width, height) != (WIDTH, HEIGHT):
        fail(f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    colours, inked, blue = set(), 0, 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            pixel = tuple(row[x:x + 3])
            colours.add(pixel)
            inked += pixel != (255, 255, 255)
            blue += pixel == first_colour
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
        self.rows: list[tuple[str, list[str]]] = []  # (class, cells) of the tables' bodies
        self.tables: dict[str, list[tuple[str, list[str]]]] = {}  # the same, by the table's class
        self._table = ""
        self.charts: list[dict] = []  # aria-label, polyline point counts, crosses
        self._text: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in ("h1", "h2", "h3", "td"):
            self._text = []
        elif tag == "table":
            self._table = a.get("class", "")
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append((a.get("class", ""), []))
            self.tables.setdefault(self._table, []).append(self.rows[-1])
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
                    "Profile: profile/mlp/steps=2/warmup=1/seed=1/batch=16", "Time"]:
        if heading not in dom.headings:
            fail(f"no heading {heading!r} in {dom.headings}")
    cases = dom.tables.get("records", [])
    if [cells[0] for _, cells in cases] != [r["key"] for r in records]:
        fail(f"table rows {[cells[0] for _, cells in cases]} are not the records' keys")
    # A fingerprint case: its heading and a row per parameter, inferred against the preset.
    fingerprints = [r for r in records if r["kind"] == "fingerprint"]
    if not fingerprints:
        fail("the suite has no fingerprint case")
    parameters = [row["parameter"] for r in fingerprints for row in r["detail"]["parameters"]]
    for record in fingerprints:
        if f"Fingerprint: {record['key']}" not in dom.headings:
            fail(f"no heading for {record['key']} in {dom.headings}")
    rows = dom.tables.get("fingerprint", [])
    if [cells[0] for _, cells in rows] != parameters:
        fail(f"fingerprint rows {[cells[0] for _, cells in rows]}, expected {parameters}")
    for cls, cells in rows:
        if cells[3] != ("yes" if cells[1] == cells[2] else "NO") or cls != ("pass" if cells[3] == "yes" else "fail"):
            fail(f"fingerprint row {cells} (class {cls!r}): the match is not inferred == preset")
    for (cls, cells), record in zip(cases, records):
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
                "Median step time per policy, by phase",
                "Time per policy (stacked by op) and per training run"]
    if sorted(charts) != sorted(expected) or len(dom.charts) != len(expected):
        fail(f"charts {[c['title'] for c in dom.charts]}, expected {expected}")
    train = next(r for r in records if r["kind"] == "train")
    steps = len(train["detail"]["reference"]["steps"])
    loss = charts["mlp: training loss per step"]["polylines"]
    if loss != [steps] * 4:  # the reference and three policies, a point per step
        fail(f"loss curves have {loss} points, expected 4 x {steps}")
    if charts["mlp: loss scale, skipped steps marked"]["crosses"] < 2:
        fail("fp16's skipped first step is not marked on the scale chart")
    if charts["gemm: normwise error against problem size"]["polylines"] != [2, 2, 2]:
        fail("the gemm error-against-size chart lacks a line of two sizes per policy")
    return f"{len(dom.rows)} rows, {len(dom.charts)} charts, headings {len(dom.headings)}"


def fixture_device(result: dict, name: str, sms: int, scale: float) -> dict:
    """A record built for this test from the real one: a made-up GPU, its name saying so, its
    cases' keys those of a GPU run, its audit cases' errors scaled (gemm's by `scale`, so that the devices
    disagree there), its training losses and step times scaled too."""
    fixture = copy.deepcopy(result)
    fixture["note"] = f"TEST FIXTURE built by browser_check.py from {result['suite']}'s real record"
    # Every case of a GPU run's record names its backend (docs/results.md).
    fixture["environment"]["device"] = {
        "kind": "gpu", "name": name, "compute_capability": "9.0", "sms": sms,
        "memory_bytes": 80 * 2**30, "sm_clock_mhz": None, "memory_clock_mhz": None,
        "driver": "0.0.0-fixture", "cuda_runtime": None, "cublas": None, "cudnn": None,
        "tf32_override": "unset", "mma": []}
    fixture["backend"] = "cuda"
    keys = []
    for record in fixture["records"]:
        record["key"] += "/backend=cuda"
        if record["kind"] == "audit":
            if "/gemm/" in record["key"]:
                for metric in ("normwise_rel_error", "max_ulp"):
                    if metric in record["metrics"]:
                        record["metrics"][metric] *= scale
        elif record["kind"] == "fingerprint":
            # GPU A infers another fused step than the preset's: a feature the devices differ in.
            if scale > 1:
                record["features"]["fused_k"] = "4"
                record["status"] = "fail"
                for row in record["detail"]["parameters"]:
                    if row["parameter"] == "fused_k":
                        row["inferred"], row["match"] = "4", False
        elif record["kind"] == "train":
            for run in record["detail"]["runs"]:
                for step in run["steps"]:
                    if step.get("loss_rel_error") is not None:
                        step["loss_rel_error"] *= scale
        else:
            for run in record["detail"]["runs"]:
                run["step_ms"]["median"] /= scale
            record["metrics"] = {k: v / scale if k.endswith(".step_ms") else v
                                 for k, v in record["metrics"].items()}
        keys.append(record["key"])
    fixture["expected"] = {"cases": len(keys), "keys": keys}
    return fixture


def check_comparison_dom(text: str, records: list, devices: int) -> str:
    dom = Dom()
    dom.feed(text)
    if dom.tags.get("script"):
        fail("the comparison page has a <script>")
    for heading in ["ampbench device comparison · browser", "Devices", "Accuracy", "Training",
                    "Training: train/mlp/steps=6/seed=1/batch=16", "Profiles",
                    "Profile: profile/mlp/steps=2/warmup=1/seed=1/batch=16", "Fingerprint"]:
        if heading not in dom.headings:
            fail(f"comparison: no heading {heading!r} in {dom.headings}")
    # The fingerprint: a row per case, parameter and device; the rows of the one parameter the
    # fixture GPU A changed are marked as differing when it is on the page, and none otherwise.
    rows = dom.tables.get("comparison fingerprint", [])
    for record in (r for r in records if r["kind"] == "fingerprint"):
        for parameter in record["features"]:
            on = [(cls, cells) for cls, cells in rows if cells[0] == f"{record['key']} · {parameter}"]
            if len(on) != devices:
                fail(f"comparison: {len(on)} fingerprint row(s) of {record['key']} {parameter}, "
                     f"expected {devices}")
            differ = parameter == "fused_k" and any(cells[3] == "4" for _, cells in on)
            if any(("disagree" in cls) != differ for cls, _ in on):
                fail(f"comparison: fingerprint rows of {parameter} {on}: marked wrongly "
                     f"(the devices {'differ' if differ else 'agree'})")
    if devices == 3 and not any("disagree" in cls for cls, _ in rows):
        fail("comparison: GPU A's changed fused_k is not marked")
    audits = [r["key"] for r in records if r["kind"] == "audit"]
    rows = [cells for _, cells in dom.rows if cells and cells[0] in audits]
    for key in audits:
        on = [cells for cells in rows if cells[0] == key]
        if len(on) != devices:
            fail(f"comparison: {len(on)} row(s) of {key}, expected one per device ({devices})")
    train = next(r for r in records if r["kind"] == "train")
    policies = [run["policy"] for run in train["detail"]["runs"]]
    expected = ["gemm: normwise error per case, a bar per device",
                "softmax: normwise error per case, a bar per device"]
    expected += [f"{p}: loss error per step, a line per device" for p in policies]
    expected += ["Median step time by phase, per policy and device",
                 "Step time over fp32's, a bar per device"]
    titles = [c["title"] for c in dom.charts]
    if sorted(titles) != sorted(expected):
        fail(f"comparison charts {titles}, expected {expected}")
    for p in policies:
        chart = next(c for c in dom.charts if c["title"].startswith(f"{p}:"))
        if len(chart["polylines"]) != devices:
            fail(f"comparison: {chart['title']} has {len(chart['polylines'])} lines, "
                 f"expected one per device ({devices})")
    return f"{len(dom.rows)} rows, {len(dom.charts)} charts"


def browse(chromium: str, page: pathlib.Path, shot: pathlib.Path) -> str:
    """Screenshots the page into `shot` and returns its DOM."""
    shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                   f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"]
        run(browser + [f"--screenshot={shot}", page.resolve().as_uri()])
        dom = run(browser + ["--dump-dom", page.resolve().as_uri()]).stdout
    if not shot.exists():
        fail(f"chromium wrote no screenshot {shot}")
    return dom


def check_comparisons(ampbench: str, chromium: str, work: pathlib.Path, result: dict) -> None:
    real = work / "result" / "result.json"
    fixtures = []
    for name, sms, scale in [("TEST FIXTURE GPU A (built by browser_check.py)", 108, 3.0),
                             ("TEST FIXTURE GPU B (built by browser_check.py)", 132, 0.5)]:
        path = work / f"fixture-{sms}.json"
        path.write_text(json.dumps(fixture_device(result, name, sms, scale)), encoding="utf-8")
        fixtures.append(path)
    for label, args, devices in [("self", [str(real), str(real), "--side-by-side"], 2),
                                 ("devices", [str(real)] + [str(f) for f in fixtures], 3)]:
        page = work / f"compare-{label}.html"
        run([ampbench, "report", *args, "--html", str(page), "--md", str(work / f"compare-{label}.md")])
        dom = browse(chromium, page, work / f"compare-{label}.png")
        print(f"comparison {label}: screenshot {check_screenshot(work / f'compare-{label}.png')}")
        print(f"comparison {label}: DOM {check_comparison_dom(dom, result['records'], devices)}")
    # The same device twice without --side-by-side, and records of different suites: exit 2.
    other = json.loads(fixtures[0].read_text(encoding="utf-8"))
    other["suite"] = "another"
    (work / "other-suite.json").write_text(json.dumps(other), encoding="utf-8")
    for args, says in [([str(real), str(fixtures[0]), str(fixtures[0])], "the same device"),
                       ([str(real), str(work / "other-suite.json")], "not of suite 'browser'")]:
        done = run([ampbench, "report", *args, "--html", str(work / "refused.html")], ok=(2,))
        if says not in done.stderr or (work / "refused.html").exists():
            fail(f"report {args}: {done.stderr!r} does not say {says!r}, or wrote the page")


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
    dom = browse(chromium, page, shot)
    browsed = time.monotonic()
    result = json.loads((work / "result" / "result.json").read_text(encoding="utf-8"))
    print(f"screenshot {shot}: {check_screenshot(shot)}")
    print(f"DOM: {check_dom(dom, result)}")
    check_comparisons(ampbench, chromium, work, result)
    end = time.monotonic()
    print(f"PASS in {end - start:.1f} s: suite {ran - start:.1f} s, report and Chromium "
          f"{browsed - ran:.1f} s, checks and the comparison pages {end - browsed:.1f} s")


if __name__ == "__main__":
    main()
