#!/usr/bin/env python3
"""A run of bench/run as Markdown: medians over repetitions, their spread, onet's ratios to each peer.

Usage: summarize.py RESULTS_DIR    (reads raw.tsv and machine.txt there; prints the summary)

plot.py reads runs through `load_workloads`, `load_rows` and `median_table` below.
"""
import csv
import os
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
SUBJECT = "onet"


def load_workloads(path=os.path.join(BENCH, "workloads")):
    """The workloads file as {id: {...}} in file order."""
    workloads = {}
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            wid, server, p, n, c, method, body, metric, *words = line.split()
            workloads[wid] = dict(server=server, path=p, requests=int(n), concurrency=int(c), method=method,
                                  body=int(body), metric=metric, description=" ".join(words))
    return workloads


def load_rows(raw_path):
    with open(raw_path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def headline(row, workloads):
    """The row's figure in its workload's metric, or None unless the invocation succeeded."""
    return number(row[workloads[row["workload"]]["metric"]]) if row["status"] == "ok" else None


def median_table(rows, workloads):
    """{(client, workload): (median or None, note)}; the note counts invocations that did not succeed."""
    cells = {}
    for row in rows:
        cells.setdefault((row["client"], row["workload"]), []).append(row)
    table = {}
    for key, group in cells.items():
        values = [v for v in (headline(r, workloads) for r in group) if v is not None]
        statuses = [r["status"] for r in group if r["status"] != "ok"]
        note = ""
        if statuses:
            kinds = ", ".join(sorted(set(statuses)))
            note = kinds if len(statuses) == len(group) else f"{len(statuses)}/{len(group)} {kinds}"
        table[key] = (statistics.median(values) if values else None, note)
    return table


def clients_in(rows):
    return list(dict.fromkeys(r["client"] for r in rows))


def workloads_in(rows, workloads):
    present = {r["workload"] for r in rows}
    return [w for w in workloads if w in present]


def cell(value, note, digits=0):
    if value is None:
        return note or "–"
    text = f"{value:,.{digits}f}"
    return f"{text} ({note})" if note else text


def row_line(label, cells):
    return f"| {label} | " + " | ".join(cells) + " |"


def header(wids, workloads, first="client"):
    names = [w + (" MB/s" if workloads[w]["metric"] == "mbps" else "") for w in wids]
    return [row_line(first, names), "|---|" + "---:|" * len(wids)]


def paired_ratios(rows, workloads, peer, wid):
    """onet ÷ peer within each repetition where both succeeded."""
    by_rep = {}
    for r in rows:
        if r["workload"] == wid and r["client"] in (SUBJECT, peer):
            by_rep.setdefault(r["rep"], {})[r["client"]] = headline(r, workloads)
    return [p[SUBJECT] / p[peer] for p in by_rep.values() if p.get(SUBJECT) and p.get(peer)]


def throughput_section(rows, workloads, wids, clients):
    medians = median_table(rows, workloads)
    lines = header(wids, workloads)
    for c in clients:
        label = f"**{c}**" if c == SUBJECT else c
        lines.append(row_line(label, [cell(*medians.get((c, w), (None, "not run"))) for w in wids]))
    if SUBJECT in clients:
        for peer in (c for c in clients if c != SUBJECT):
            ratios = []
            for w in wids:
                mine, theirs = medians.get((SUBJECT, w), (None, ""))[0], medians.get((peer, w), (None, ""))[0]
                ratios.append(f"{mine / theirs:.2f}" if mine and theirs else "—")
            lines.append(row_line(f"{SUBJECT} ÷ {peer}", ratios))
    return lines


def paired_section(rows, workloads, wids, clients):
    lines = header(wids, workloads, first="ratio")
    for peer in (c for c in clients if c != SUBJECT):
        cells = []
        for w in wids:
            ratios = paired_ratios(rows, workloads, peer, w)
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else "—")
        lines.append(row_line(f"{SUBJECT} ÷ {peer}", cells))
    return lines


def per_client_section(rows, wids, clients, value):
    """A table of value(list of the cell's rows) for each client and workload."""
    lines = [row_line("client", wids), "|---|" + "---:|" * len(wids)]
    for c in clients:
        cells = []
        for w in wids:
            text = value([r for r in rows if r["client"] == c and r["workload"] == w])
            cells.append(text if text is not None else "–")
        lines.append(row_line(c, cells))
    return lines


def spread(workloads):
    def value(group):
        values = [v for v in (headline(r, workloads) for r in group) if v is not None]
        if len(values) < 2:
            return None
        return f"{(max(values) - min(values)) / statistics.median(values) * 100:.0f} %"
    return value


def median_of(column, scale=1.0, digits=0):
    def value(group):
        values = [v for v in (number(r[column]) for r in group) if v is not None]
        return f"{statistics.median(values) / scale:,.{digits}f}" if values else None
    return value


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    folder = sys.argv[1]
    workloads = load_workloads()
    rows = load_rows(os.path.join(folder, "raw.tsv"))
    wids, clients = workloads_in(rows, workloads), clients_in(rows)
    reps = len({r["rep"] for r in rows})
    quick = any(int(r["requests"] or 0) < workloads[r["workload"]]["requests"] for r in rows if r["status"] == "ok")

    out = ["# Benchmark run", ""]
    with open(os.path.join(folder, "machine.txt")) as f:
        out += [line.rstrip() + "  " for line in f]
    out.append("")
    if quick:
        out += ["**Quick run** (every N divided by 100): it checks that the command works; its figures "
                "measure start-up and connection set-up, not throughput.", ""]
    out.append("Workloads: " + "; ".join(
        f"**{w}** {workloads[w]['description']}, N={workloads[w]['requests']:,}, C={workloads[w]['concurrency']:,}"
        for w in wids) + ".")
    out += ["", f"## Throughput, median of {reps}", "",
            "Successful requests a second (W4: MB/s of body, MB = 10⁶ B), timed inside each client; "
            f"in parentheses, invocations that failed or timed out. `{SUBJECT} ÷ peer` rows: ratios of the medians.", ""]
    out += throughput_section(rows, workloads, wids, clients)
    if reps > 1 and SUBJECT in clients and len(clients) > 1:
        out += ["", "## Paired ratios", "",
                f"{SUBJECT} ÷ peer repetition by repetition (inside one, the clients run one after another): "
                "median (min–max).", ""]
        out += paired_section(rows, workloads, wids, clients)
    if reps > 1:
        out += ["", "## Spread", "", "(max − min) ÷ median of the repetitions' throughput.", ""]
        out += per_client_section(rows, wids, clients, spread(workloads))
    out += ["", "## Peak RSS, MiB (median)", ""]
    out += per_client_section(rows, wids, clients, median_of("maxrss_kb", scale=1024, digits=1))
    out += ["", "## Connections nginx accepted (median)", ""]
    out += per_client_section(rows, wids, clients, median_of("connections"))
    print("\n".join(out))


if __name__ == "__main__":
    main()
