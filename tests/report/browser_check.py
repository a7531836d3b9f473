#!/usr/bin/env python3
"""`tiletune report` looked at as a person would: in a real browser.

Makes a database with the built tiletune (`import` of a JSON export written here: two families on one GPU,
several problem sizes, every outcome, hostile text), writes its report with `tiletune report`, and then,
with headless Chromium:
  - dumps the DOM and checks that every chart's title is there, with the counts the data implies, and that
    hostile text arrived as text;
  - measures where each chart is (on a copy of the page with a measuring script appended, so the report
    itself carries no test code), takes a screenshot of the report at that size and checks, decoding the
    PNG with zlib and struct, that each chart's region holds drawing (not background) and the colours it
    should (the heatmap's scale, the winner's red line, the tuned series' blue line, the outcome bars),
    and that the margin beside the page is blank.
Python standard library only. A missing Chromium is a failure, not a skip: tools/test installs it.

usage: browser_check.py --tiletune PATH --workdir DIR [--chromium PATH] [--example DIR]
"""

import argparse
import html.parser
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

WINDOW_WIDTH = 1400
DEVICE = "NVIDIA H100 80GB HBM3"
HOSTILE_REASON = '<b>bold</b> & "quoted" reason'


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


# ---- the database ----

def gemm_tiled_results(size, rng):
    """Every configuration of a 4x4x3 space: the slow ones by a model of tile reuse, the rest pruned or failed
    the ways a real sweep records them. Returns (results, ok_count)."""
    results, ok = [], 0
    n = size[0]
    for tw in (8, 16, 32, 64):
        for by in (8, 16, 32, 64):
            for tk in (8, 16, 32):
                params = {"TILE_WIDTH": tw, "BLOCK_Y": by, "TILE_K": tk}
                smem = 4 * (by * tk + tk * tw)
                if tk != tw and tk != by:
                    results.append({"params": params, "outcome": "pruned",
                                    "reason": "TILE_K must equal TILE_WIDTH or BLOCK_Y"})
                elif tw * by > 1024:
                    results.append({"params": params, "outcome": "pruned",
                                    "reason": "threads %d > 1024" % (tw * by)})
                elif smem > 49152:
                    results.append({"params": params, "outcome": "pruned",
                                    "reason": "smem %d > 49152" % smem})
                elif (tw, by, tk) == (8, 8, 8):
                    results.append({"params": params, "outcome": "compile_failed", "reason": HOSTILE_REASON})
                elif (tw, by, tk) == (64, 8, 8):
                    results.append({"params": params, "outcome": "wrong_result",
                                    "reason": "relative L2 error 0.31 > 1e-4", "error": 0.31})
                else:
                    # Faster with more reuse, slower past the occupancy sweet spot; a little noise.
                    reuse = 2.0 / (1.0 / tw + 1.0 / by)
                    gflops = 600.0 * reuse / (1.0 + (tw * by / 512.0) ** 2 * 0.4) / (1.0 + 0.15 * (tk == 8))
                    ms = 1e3 * 2.0 * n ** 3 / 1e9 / gflops * rng.uniform(0.97, 1.03)
                    results.append(timed(params, ms, 2.0 * n ** 3 / 1e9, "GFLOP/s", rng))
                    ok += 1
    return results, ok


def gemm_naive_results(size, rng):
    results = []
    n = size[0]
    for bx in (16, 32, 64, 128):
        for by in (1, 2, 4, 8):
            gflops = 1200.0 / (1 + abs(math.log2(bx / 64)) * 0.2 + abs(math.log2(by / 4)) * 0.1)
            ms = 1e3 * 2.0 * n ** 3 / 1e9 / gflops
            results.append(timed({"BLOCK_X": bx, "BLOCK_Y": by}, ms * rng.uniform(0.98, 1.02), 2.0 * n ** 3 / 1e9,
                                 "GFLOP/s", rng))
    return results, len(results)


def timed(params, ms, gflop, unit, rng):
    return {"params": params, "outcome": "ok", "reason": "", "median_ms": ms, "min_ms": ms * 0.98,
            "spread": rng.uniform(0.002, 0.02), "repetitions": 25, "metric": gflop / (ms / 1e3), "metric_unit": unit,
            "error": 1e-7, "registers": 40, "static_smem": 8192, "dynamic_smem": 0, "threads_per_block": 256,
            "occupancy": 0.75, "occupancy_limiter": "registers", "sm_clock_mhz": 1980.0}


def write_export(path):
    """The export to import, and what the report must say about it: per sweep its family, size and counts."""
    rng = random.Random(7)
    device = {"name": DEVICE, "uuid": "GPU-0d3c2b1a-0000-4000-8000-000000000001", "arch": "sm_90", "sm_count": 132,
              "is_profile": False,
              "properties": {"clock_mhz": 1980, "memory_clock_mhz": 2619, "global_memory_bytes": 85520809984,
                             "l2_bytes": 52428800, "driver_version": 12040, "runtime_version": 12040}}
    tiled = {"name": "gemm_tiled", "template_hash": "t1", "description": {
        "name": "gemm_tiled",
        "parameters": {"TILE_WIDTH": {"values": [8, 16, 32, 64], "default": 16},
                       "BLOCK_Y": {"values": [8, 16, 32, 64], "default": 16},
                       "TILE_K": {"values": [8, 16, 32], "default": 16}},
        "baselines": [{"library": "cublas_sgemm", "operands": {}}, "gemm_naive"]}}
    naive = {"name": "gemm_naive", "template_hash": "n1", "description": {
        "name": "gemm_naive",
        "parameters": {"BLOCK_X": {"values": [16, 32, 64, 128]}, "BLOCK_Y": {"values": [1, 2, 4, 8]}}}}
    plan = [(tiled, gemm_tiled_results, 1024), (tiled, gemm_tiled_results, 2048), (tiled, gemm_tiled_results, 4096),
            (naive, gemm_naive_results, 1024), (naive, gemm_naive_results, 4096)]
    sweeps, expected = [], []
    for i, (family, make, n) in enumerate(plan):
        results, ok = make((n, n, n), rng)
        sweeps.append({"uid": "%032x" % (i + 1), "device": device, "family": family,
                       "problem": {"size": "%dx%dx%d" % (n, n, n), "args": ""}, "space_hash": "s-" + family["name"],
                       "kind": "sweep", "strategy": "brute_force", "status": "done",
                       "started_at": "2025-01-%02dT10:00:00.000Z" % (i + 1),
                       "ended_at": "2025-01-%02dT10:20:00.000Z" % (i + 1), "tiletune_version": "0.1.0",
                       "git_sha": "5a64c90", "results": results})
        expected.append({"family": family["name"], "ok": ok, "results": len(results)})
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"format": "tiletune-export", "schema_version": 1, "exported_at": "2025-02-01T00:00:00.000Z",
                   "tiletune": {"version": "0.1.0", "git_sha": "5a64c90"}, "sweeps": sweeps}, out)
    return expected


def run(command, expect_rc=0, what=""):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    check(done.returncode == expect_rc, "%s: %s exited %d, expected %d\nstdout: %s\nstderr: %s" %
          (what, " ".join(command), done.returncode, expect_rc, out[-2000:], err[-2000:]))
    return out, err


# ---- the browser ----

def chromium_command(chromium, workdir, height):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--force-device-scale-factor=1", "--no-first-run", "--disable-extensions",
            "--user-data-dir=" + os.path.join(workdir, "chromium-profile"),
            "--window-size=%d,%d" % (WINDOW_WIDTH, height)]


def dump_dom(chromium, workdir, page, height=1200):
    out, _ = run(chromium_command(chromium, workdir, height) + ["--dump-dom", "file://" + page],
                 what="chromium --dump-dom")
    return out


def screenshot(chromium, workdir, page, png, height):
    if os.path.exists(png):
        os.remove(png)
    run(chromium_command(chromium, workdir, height) + ["--screenshot=" + png, "file://" + page],
        what="chromium --screenshot")
    check(os.path.exists(png), "chromium wrote no screenshot at " + png)


PROBE = """<script>
(() => {
  const out = {height: Math.ceil(document.documentElement.scrollHeight), charts: []};
  for (const el of document.querySelectorAll('[data-chart]')) {
    const r = el.getBoundingClientRect();
    const holder = el.closest('.tt-view') || el.closest('figure');
    const h4 = holder ? holder.querySelector('h4') : null;
    out.charts.push({kind: el.dataset.chart, id: el.dataset.id, title: h4 ? h4.textContent : '',
                     x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height});
  }
  const pre = document.createElement('pre');
  pre.id = 'tt-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def layout(chromium, workdir, report):
    """Where the browser lays out each chart: measured on a copy of the report with PROBE appended."""
    with open(report, encoding="utf-8") as f:
        text = f.read()
    check(text.count("</body>") == 1, "the report has no single </body>")
    probe = os.path.join(workdir, "probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", PROBE + "</body>"))
    dom = dump_dom(chromium, workdir, probe)
    match = re.search(r'<pre id="tt-probe">(.*?)</pre>', dom, re.S)
    check(match is not None, "the measuring script left no result: did the page's script run?")
    return json.loads(html.unescape(match.group(1)))


class Dom(html.parser.HTMLParser):
    """The dumped DOM's headings, all its text, and its elements by tag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.headings, self.text, self.tags, self._open = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in ("h1", "h2", "h3", "h4"):
            self._open.append([tag, ""])

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            self.headings.append(tuple(self._open.pop()))

    def handle_data(self, data):
        self.text.append(data)
        for entry in self._open:
            entry[1] += data


# ---- PNG ----

def read_png(path):
    """(width, height, rows) of an 8-bit RGB or RGBA PNG; rows[y] is bytes, 3 or 4 per pixel."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", path + " is not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    check(header is not None, path + ": no IHDR")
    width, height, depth, colour, _, _, interlace = header
    check(depth == 8 and colour in (2, 6) and interlace == 0,
          "%s: only 8-bit RGB(A) without interlace is read here, got depth %d colour %d" % (path, depth, colour))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    check(len(raw) == (stride + 1) * height, path + ": truncated image data")
    rows, prev = [], bytes(stride)
    mask_lo, mask_hi = int.from_bytes(b"\x7f" * stride, "big"), int.from_bytes(b"\x80" * stride, "big")
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1:start + 1 + stride]
        if kind == 0:
            cur = line
        elif kind == 2:  # Up: bytewise addition without carries, on the whole row at once
            if not any(line):
                cur = prev
            else:
                a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
                cur = (((a & mask_lo) + (b & mask_lo)) ^ ((a ^ b) & mask_hi)).to_bytes(stride, "big")
        else:
            out = bytearray(line)
            if kind == 1:
                for i in range(bpp, stride):
                    out[i] = (out[i] + out[i - bpp]) & 255
            elif kind == 3:
                for i in range(stride):
                    out[i] = (out[i] + ((out[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
            elif kind == 4:
                for i in range(stride):
                    a = out[i - bpp] if i >= bpp else 0
                    b = prev[i]
                    c = prev[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else:
                raise CheckFailed("%s: row %d has filter type %d" % (path, y, kind))
            cur = bytes(out)
        rows.append(cur)
        prev = cur
    return width, height, rows, bpp


def region_stats(image, box, inset=2):
    """Share of non-background pixels in box, and those pixels' colours quantised to 16 levels."""
    width, height, rows, bpp = image
    x0, y0 = max(0, int(box["x"]) + inset), max(0, int(box["y"]) + inset)
    x1, y1 = min(width, int(box["x"] + box["w"]) - inset), min(height, int(box["y"] + box["h"]) - inset)
    check(x1 > x0 and y1 > y0, "chart %s %s lies outside the screenshot (%s)" % (box["kind"], box["id"], box))
    drawn, colours = 0, {}
    for y in range(y0, y1):
        row = rows[y]
        for x in range(x0, x1):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            if r < 240 or g < 240 or b < 240:
                drawn += 1
                key = (r >> 4, g >> 4, b >> 4)
                colours[key] = colours.get(key, 0) + 1
    return drawn / float((x1 - x0) * (y1 - y0)), colours


def count_near(colours, rgb, tolerance=2):
    """Pixels whose quantised colour is within `tolerance` levels of rgb in every channel."""
    target = [c >> 4 for c in rgb]
    return sum(n for key, n in colours.items() if all(abs(k - t) <= tolerance for k, t in zip(key, target)))


# What each chart must show in its box: the least share of drawn pixels and colours it must hold.
EXPECTED_DRAWING = {
    "heatmap": {"share": 0.30, "colours": {"a dark viridis blue": (62, 74, 137), "a viridis green": (31, 158, 137),
                                           "the winner's red outline": (227, 26, 28)}},
    "distribution": {"share": 0.03, "colours": {"the bars' blue-grey": (141, 169, 196),
                                                "the winner's red line": (227, 26, 28)}},
    "size": {"share": 0.01, "colours": {"the tuned series' blue": (31, 120, 180)}},
    "outcomes": {"share": 0.02, "colours": {"the ok bar's green": (51, 160, 44)}},
    "best-so-far": {"share": 0.005, "colours": {"the step line's blue-grey": (141, 169, 196),
                                                "the improvements' red dots": (227, 26, 28)}},
}


# ---- the check ----

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiletune", required=True, help="the built tiletune binary")
    parser.add_argument("--workdir", required=True, help="where the database, report and screenshot go")
    parser.add_argument("--chromium", help="the browser (default: chromium, else chromium-browser, from PATH)")
    parser.add_argument("--example", help="also copy report.html and report.png here")
    args = parser.parse_args()

    chromium = shutil.which(args.chromium) if args.chromium else shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if not chromium:
        print("FAIL: no chromium%s: this test renders the report in headless Chromium; install it with "
              "'apt-get install -y chromium' (tools/test installs it)" %
              (" at " + args.chromium if args.chromium else " in PATH"), file=sys.stderr)
        return 1
    workdir = os.path.abspath(args.workdir)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    db, export = os.path.join(workdir, "tune.db"), os.path.join(workdir, "export.json")
    report, png = os.path.join(workdir, "report.html"), os.path.join(workdir, "report.png")
    started = time.time()

    expected = write_export(export)
    run([args.tiletune, "import", "--db", db, export], what="import")

    # The command's refusals are one line each and leave the database alone.
    _, err = run([args.tiletune, "report", "--db", db, "-o", db], 2, "report over the database")
    check("refusing to write over it" in err and err.count("\n") == 1, "report -o DB: " + err)
    _, err = run([args.tiletune, "report", "--db", db, "--family", "nope", "-o", report], 1, "unknown family")
    check(err.startswith("tiletune report: unknown family 'nope'") and err.count("\n") == 1, "--family nope: " + err)
    _, err = run([args.tiletune, "report", "--db", db], 2, "no output")
    check("-o" in err and err.count("\n") == 1, "report without -o: " + err)
    check(not os.path.exists(report), "a refused report wrote " + report)

    run([args.tiletune, "report", "--db", db, "-o", report], what="report")
    with open(report, encoding="utf-8") as f:
        text = f.read()
    check(not re.search(r"https?:|src=|url\((?!#)", text), "the report refers to something outside itself")

    # The DOM as the browser built it: every title, the counts, hostile text as text.
    dom = Dom()
    dom.feed(dump_dom(chromium, workdir, report))
    headings = [t for _, t in dom.headings]
    all_text = "".join(dom.text)
    check(dom.tags.get("script", 0) == 1, "the DOM has %d script elements, expected the page's one" %
          dom.tags.get("script", 0))
    check(HOSTILE_REASON in all_text, "the hostile reason is not shown as text")
    check("tiletune report" in headings, "no 'tiletune report' heading")
    check("Device: %s (sm_90, 132 SMs)" % DEVICE in headings, "no device heading")
    for family, unit in (("gemm_tiled", "GFLOP/s"), ("gemm_naive", "GFLOP/s")):
        title = "Best %s vs problem size: %s on %s" % (unit, family, DEVICE)
        check(title in headings, "no size chart titled %r" % title)
    for want in ("12.4", "1980 MHz", "default (BLOCK_Y=16, TILE_K=16, TILE_WIDTH=16)", "gemm_naive (best stored)",
                 "cublas_sgemm (a library call"):
        check(want in all_text, "the page does not say %r" % want)
    pair = {"gemm_tiled": r"TILE_WIDTH × BLOCK_Y|BLOCK_Y × TILE_WIDTH", "gemm_naive": r"BLOCK_X × BLOCK_Y|BLOCK_Y × BLOCK_X"}
    for e in expected:
        heat = [t for t in headings if re.fullmatch(r"Heatmap: GFLOP/s over (%s) \(sweep \d+\)" % pair[e["family"]], t)]
        dist = [t for t in headings if t.startswith("Distribution: median times of %d ok configurations (sweep " % e["ok"])]
        outs = [t for t in headings if t.startswith("Outcomes: %d configurations (sweep " % e["results"])]
        check(heat and dist and outs, "sweep of %s: missing a title (heatmap %s, distribution of %d: %s, outcomes of %d: %s)"
              % (e["family"], heat, e["ok"], dist, e["results"], outs))

    # Where the charts are, then whether each is drawn there.
    measured = layout(chromium, workdir, report)
    height = measured["height"]
    check(0 < height <= 16000, "page height %d" % height)
    visible = [c for c in measured["charts"] if c["w"] > 0 and c["h"] > 0]
    kinds = {}
    for c in visible:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    want_kinds = {"heatmap": len(expected), "distribution": len(expected), "outcomes": len(expected),
                  "best-so-far": len(expected), "size": 2}
    check(kinds == want_kinds, "visible charts %s, expected %s" % (kinds, want_kinds))
    # The default heatmap of each sweep is over the pair that explains the most variance of its times.
    shown = [c["title"] for c in visible if c["kind"] == "heatmap"]
    for family in pair:
        want = sum(1 for e in expected if e["family"] == family)
        got = [t for t in shown if re.fullmatch(r"Heatmap: GFLOP/s over (%s) \(sweep \d+\)" % pair[family], t)]
        check(len(got) == want, "%d default heatmaps of %s over %s, expected %d (shown: %s)" %
              (len(got), family, pair[family], want, shown))
    for c in visible:
        check(c["x"] + c["w"] <= WINDOW_WIDTH, "chart %s %s overflows the window: %s" % (c["kind"], c["id"], c))
    screenshot(chromium, workdir, report, png, height)
    image = read_png(png)
    check(image[0] == WINDOW_WIDTH and image[1] >= height,
          "screenshot is %dx%d, expected %dx%d" % (image[0], image[1], WINDOW_WIDTH, height))
    for c in visible:
        share, colours = region_stats(image, c)
        want = EXPECTED_DRAWING[c["kind"]]
        check(share >= want["share"], "%s chart %r is blank: %.1f%% of its box drawn, expected at least %.0f%%" %
              (c["kind"], c["title"], 100 * share, 100 * want["share"]))
        for name, rgb in want["colours"].items():
            check(count_near(colours, rgb) >= 20, "%s chart %r shows no %s" % (c["kind"], c["title"], name))
        print("ok: %-12s %5.1f%% drawn  %s" % (c["kind"], 100 * share, c["title"]))
    # Without script the page is the same: the charts need none (the script only offers the heatmaps'
    # other parameter pairs, in a place kept for it either way). Headless Chromium takes no screenshot with
    # script disabled, so the page's one script is taken out of a copy instead.
    check(len(re.findall(r"<script>.*?</script>", text, re.S)) == 1, "the report has not exactly one script")
    plain_page = os.path.join(workdir, "noscript.html")
    with open(plain_page, "w", encoding="utf-8") as f:
        f.write(re.sub(r"<script>.*?</script>", "", text, flags=re.S))
    plain_png = os.path.join(workdir, "report-noscript.png")
    screenshot(chromium, workdir, plain_page, plain_png, height)
    plain = read_png(plain_png)
    for c in visible:
        x0, x1 = int(c["x"]) * image[3], int(c["x"] + c["w"]) * image[3]
        same = all(image[2][y][x0:x1] == plain[2][y][x0:x1] for y in range(int(c["y"]), int(c["y"] + c["h"])))
        check(same, "%s chart %r is drawn differently without script" % (c["kind"], c["title"]))
    # The margin right of the page is background: what is drawn above is the page, not noise.
    page_right = max(int(c["x"] + c["w"]) for c in visible)
    margin = {"kind": "margin", "id": "-", "x": page_right + 8, "y": 0, "w": WINDOW_WIDTH - page_right - 8, "h": height}
    if margin["w"] > 4:
        share, _ = region_stats(image, margin)
        check(share == 0, "the margin right of the page is not blank (%.2f%% drawn)" % (100 * share))

    if args.example:
        os.makedirs(args.example, exist_ok=True)
        shutil.copy(report, os.path.join(args.example, "report-example.html"))
        shutil.copy(png, os.path.join(args.example, "report-example.png"))
    print("PASS: %d charts drawn where the browser laid them out; screenshot %s (%dx%d), %.1f s" %
          (len(visible), png, image[0], image[1], time.time() - started))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckFailed as failure:
        print("FAIL: %s" % failure, file=sys.stderr)
        sys.exit(1)
    except (OSError, subprocess.TimeoutExpired) as error:
        print("FAIL: %s" % error, file=sys.stderr)
        sys.exit(1)
