#!/usr/bin/env python3
"""Throughput per workload, one bar per client, as SVG (standard library only).

Usage: plot.py INPUT OUTPUT.svg [--subtitle TEXT]

INPUT is a run's raw.tsv (bench/run; medians over its repetitions, the subtitle from machine.txt
beside it) or a kept run's Markdown (bench/runs/*.md; its "Throughput (median)" table). Each
workload's bars are normalised to its fastest client (= 1.0), so requests a second and W4's MB/s
share one axis; the fastest figure is written under the workload, every bar's own in its tooltip.
"""
import os
import re
import sys
from html import escape

sys.dont_write_bytecode = True   # no __pycache__ left in bench/
import summarize  # noqa: E402

# Okabe–Ito colours, told apart with any colour vision; each client keeps its colour from run to
# run, and onet's is the one that stands out.
COLOURS = {"curl-multi": "#0072B2", "ahc": "#E69F00", "composite": "#56B4E9", "composite-ca-cache": "#56B4E9",
           "urlsession": "#009E73", summarize.SUBJECT: "#D55E00"}
SPARE = ["#CC79A7", "#F0E442", "#000000", "#999999"]
BAR, MIN_GROUP, LEFT, TOP, PLOT_H = 14, 96, 56, 78, 260


def from_raw(path):
    workloads = summarize.load_workloads()
    rows = summarize.load_rows(path)
    medians = summarize.median_table(rows, workloads)
    wids = summarize.workloads_in(rows, workloads)
    values = {key: value for key, (value, _) in medians.items()}
    notes = {key: note for key, (_, note) in medians.items()}
    subtitle = ""
    machine = os.path.join(os.path.dirname(path), "machine.txt")
    if os.path.exists(machine):
        with open(machine) as f:
            fields = dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)
        subtitle = (f"{fields.get('date', '')}, commit {fields.get('commit', '?')}, "
                    f"repetitions: {fields.get('repetitions', '?')}")
    metrics = {w: workloads[w]["metric"] for w in wids}
    return wids, summarize.clients_in(rows), values, notes, metrics, subtitle


def from_markdown(path):
    """The first table under a "Throughput" heading: a header of workload ids, a row per client."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("#") and "Throughput" in line), None)
    if start is None:
        sys.exit(f"plot.py: no Throughput table in {path}")
    table = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif table:
            break
    wids = [h.split()[0] for h in table[0][1:]]
    clients, values, notes, metrics = [], {}, {}, {}
    for row in table[2:]:
        client = row[0].strip("*")
        if "÷" in client:
            continue
        clients.append(client)
        for wid, text in zip(wids, row[1:]):
            match = re.match(r"\**([\d,]+(?:\.\d+)?)(?=[\s*]|$)", text)   # not "5/5 timeout"
            values[(client, wid)] = float(match.group(1).replace(",", "")) if match else None
            notes[(client, wid)] = "" if match else text
            if re.match(r"\**[\d,.]+\s*MB/s", text):
                metrics[wid] = "mbps"
    metrics = {w: "mbps" if "MB/s" in h else metrics.get(w, "rps") for w, h in zip(wids, table[0][1:])}
    return wids, clients, values, notes, metrics, ""


def short(value, metric):
    unit = "MB/s" if metric == "mbps" else "req/s"
    text = f"{value / 1000:.1f}k" if value >= 10000 else f"{value:,.0f}"
    return f"{text} {unit}"


def svg(wids, clients, values, notes, metrics, subtitle):
    spare = iter(SPARE * len(clients))
    colours = {c: COLOURS.get(c) or next(spare) for c in clients}
    group = max(len(clients) * BAR + 22, MIN_GROUP)
    width = max(LEFT + len(wids) * group + 20, 640)
    height = TOP + PLOT_H + 62
    base = TOP + PLOT_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">Throughput per workload, '
           'each normalised to its fastest client (= 1.0)</text>']
    if subtitle:
        out.append(f'<text x="{LEFT}" y="37" fill="#555555">{escape(subtitle)}</text>')
    x = LEFT
    for c in clients:   # legend
        weight = ' font-weight="bold"' if c == summarize.SUBJECT else ""
        out.append(f'<rect x="{x}" y="50" width="12" height="12" fill="{colours[c]}"/>'
                   f'<text x="{x + 16}" y="60"{weight}>{escape(c)}</text>')
        x += 28 + 7 * len(c)
    for tick in range(5):   # axis and grid
        y = base - PLOT_H * tick / 4
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#dddddd"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555555">{tick / 4:.2f}</text>')
    for i, wid in enumerate(wids):
        x0 = LEFT + i * group + (group - len(clients) * BAR) / 2
        present = [values.get((c, wid)) for c in clients if values.get((c, wid))]
        fastest = max(present) if present else None
        for j, c in enumerate(clients):
            x = x0 + j * BAR
            value = values.get((c, wid))
            if value and fastest:
                h = PLOT_H * value / fastest
                tip = f"{c}, {wid}: {short(value, metrics[wid])} ({value / fastest:.2f} of the fastest)"
                out.append(f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{BAR - 2}" height="{h:.1f}" '
                           f'fill="{colours[c]}"><title>{escape(tip)}</title></rect>')
            else:
                tip = f"{c}, {wid}: {notes.get((c, wid)) or 'no figure'}"
                cross = f"M{x + 1:.1f},{base - 11} l10,10 m0,-10 l-10,10"
                out.append(f'<path d="{cross}" stroke="{colours[c]}" stroke-width="2.5">'
                           f'<title>{escape(tip)}</title></path>')
        middle = x0 + len(clients) * BAR / 2
        out.append(f'<text x="{middle:.1f}" y="{base + 16}" text-anchor="middle" font-weight="bold">{wid}</text>')
        if fastest:
            out.append(f'<text x="{middle:.1f}" y="{base + 30}" text-anchor="middle" fill="#555555" '
                       f'font-size="9">1.0 = {short(fastest, metrics[wid])}</text>')
    out.append(f'<text x="{LEFT}" y="{height - 8}" fill="#555555" font-size="10">× no figure (timed out, failed '
               'or not run); requests a second, W4 MB/s; bench/README.md describes the workloads.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    subtitle = None
    if "--subtitle" in args:
        at = args.index("--subtitle")
        subtitle = args[at + 1] if at + 1 < len(args) else ""
        del args[at:at + 2]
    if len(args) != 2:
        sys.exit(__doc__.strip())
    source, target = args
    wids, clients, values, notes, metrics, found = (from_markdown if source.endswith(".md") else from_raw)(source)
    with open(target, "w") as f:
        f.write(svg(wids, clients, values, notes, metrics, found if subtitle is None else subtitle))


if __name__ == "__main__":
    main()
