#!/usr/bin/env python3
"""Merges the JSON rows of one or more `benchmarks/decisions` runs into markdown tables, one per
experiment, each followed by issue #25's targets computed over its rows.

    python3 benchmarks/decisions_table.py a.json b.json ... [--experiment scheduling] [--out FILE]

A row is keyed by (experiment, graph, devices); a key found in two files is an error, so that a
table never silently mixes two runs of one row. Learned figures are the mean over the row's seeds
(the benchmark's "learned_ms"), with their spread (max - min). The runs merged should come from one
build: the script cannot check that, so say the commit beside the table.
"""

import argparse
import os
import json
import math
import statistics
import sys


def load(paths):
    rows, seen = [], {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            sys.exit(f"decisions_table: {path}: {e} (expected a JSON list written by benchmarks/decisions)")
        if not isinstance(data, list):
            sys.exit(f"decisions_table: {path}: a JSON {type(data).__name__} (expected the benchmark's list of rows)")
        for i, r in enumerate(data):
            try:
                key = (r["experiment"], r["graph"], r["devices"])
            except (KeyError, TypeError):
                sys.exit(f"decisions_table: {path}: row {i} has no experiment, graph and devices")
            if key in seen:
                sys.exit(f"decisions_table: row {key} is in both {seen[key]} and {path} (expected each row once)")
            seen[key] = path
            rows.append(r)
    return rows


def pct(x):
    return f"{100 * x:+.2f} %"


def ms(x):
    return "–" if x is None else f"{x:.3f}"


def learned(r):
    return f"**{r['learned_ms']:.3f}** ({r.get('learned_spread_ms', 0):.3f})"


def sources(r):
    return ", ".join(sorted(set(r.get("learned_from", [])))) or "–"


def against(xs):
    """The mean of the rows' relative differences and how many rows are worse (above zero)."""
    return f"{pct(statistics.fmean(xs))} on average", sum(x > 1e-12 for x in xs)


def geomean(ratios):
    return math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else float("nan")


def placement(rows, out):
    out.append("| graph | n | ops | lower bound | best heuristic | ms | **learned** (spread) | vs best | from |")
    out.append("|---|---:|---:|---:|---|---:|---:|---:|---|")
    fits = at_or_below = strictly = 0
    headroom, tight, tight_ok, oom, no_fit = [], 0, 0, 0, []
    for r in rows:
        b, l = r.get("best_heuristic_ms"), r["learned_ms"]
        fit = bool(r.get("best_heuristic")) and b is not None
        vs = pct(l / b - 1) if fit else "–"
        out.append(f"| {r['graph']} | {r['devices']} | {r['ops']} | {ms(r.get('lower_bound_ms'))} | "
                   f"{r.get('best_heuristic') or 'none fits'} | {ms(b)} | {learned(r)}{'*' if r.get('learned_oom') else ''}"
                   f" | {vs} | {sources(r)} |")
        if not fit:
            need, have = r.get("memory_lower_bound_bytes"), r.get("cluster_memory_bytes")
            if need is not None and have:
                no_fit.append((r, need / have))
            continue
        fits += 1
        oom += bool(r.get("learned_oom"))
        ok = not r.get("learned_oom") and l <= b * (1 + 1e-12)
        at_or_below += ok
        strictly += ok and l < b * (1 - 1e-9)
        lb = r.get("lower_bound_ms")
        if lb and b > 1.05 * lb:
            headroom.append(l / b)
        else:
            tight += 1
            tight_ok += ok
    out.append("")
    out.append(f"- rows where a heuristic fits: {fits}; learned at or below the best heuristic on {at_or_below}, "
               f"strictly below on {strictly}; out of memory on {oom} (targets: 30 and 24 of 32, no OOM)")
    out.append(f"- geometric mean of learned / best heuristic over the {len(headroom)} rows whose best heuristic is "
               f"more than 5 % above its lower bound: {geomean(headroom):.4f} (target: at most 0.95); "
               f"at or below it on {tight_ok} of the {tight} others (target: all)")
    for r, share in no_fit:
        # the learned placement must fit wherever the bound leaves at least 10 % of the cluster's memory
        fits_now = not r.get("learned_oom")
        verdict = ("fits, although the bound says nothing can: check sim::memory_lower_bound" if share > 1 and fits_now
                   else "out of memory, as every placement and order must be" if share > 1
                   else "fits, as the target asks" if fits_now
                   else "out of memory: the target (fit where the bound is at most 90 %) is missed" if share <= 0.9
                   else "out of memory (the bound is within 10 % of the cluster's memory: no target)")
        out.append(f"- {r['graph']} on {r['devices']} devices, where no heuristic fits: any placement and order holds "
                   f"{r['memory_lower_bound_bytes'] / 1e9:.2f} GB at once, {share * 100:.0f} % of the cluster's "
                   f"{r['cluster_memory_bytes'] / 1e9:.2f} GB (sim::memory_lower_bound); learned: {verdict}")


def scheduling(rows, out):
    out.append("| graph | n | placement | critical path | HEFT rank | own order | schedule bound | **learned** (spread) "
               "| vs best of critical path and HEFT rank | vs best of the three | from |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    rules, three = [], []
    for r in rows:
        l = r["learned_ms"]
        rule = min(r["critical_path_ms"], r["heft_rank_ms"])
        rules.append(l / rule - 1)
        three.append(l / r["best_heuristic_ms"] - 1)
        out.append(f"| {r['graph']} | {r['devices']} | {r.get('placement', '–')} | {ms(r['critical_path_ms'])} | "
                   f"{ms(r['heft_rank_ms'])} | {ms(r.get('own_ms'))} | {ms(r.get('schedule_lower_bound_ms'))} | "
                   f"{learned(r)} | {pct(rules[-1])} | {pct(three[-1])} | {sources(r)} |")
    (rule_mean, rule_worse), (three_mean, three_worse) = against(rules), against(three)
    out.append("")
    out.append(f"- against the best of critical-path and HEFT upward-rank priorities (issue #25's baseline): "
               f"{rule_mean} over {len(rows)} rows (target: -3 %), worse on {rule_worse} (target: none)")
    out.append(f"- against the best of those and the placement heuristic's own order: {three_mean}, worse on "
               f"{three_worse}")


def fusion(rows, out):
    out.append("| graph | n | placement | unfused | greedy fusion | priority fusion | **learned** (spread) | vs greedy "
               "| vs the better | from |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    greedy, better = [], []
    for r in rows:
        l = r["learned_ms"]
        greedy.append(l / r["greedy_fusion_ms"] - 1)
        better.append(l / r["best_heuristic_ms"] - 1)
        out.append(f"| {r['graph']} | {r['devices']} | {r.get('placement', '–')} | {ms(r.get('unfused_ms'))} | "
                   f"{ms(r['greedy_fusion_ms'])} | {ms(r.get('priority_fusion_ms'))} | {learned(r)} | "
                   f"{pct(greedy[-1])} | {pct(better[-1])} | {sources(r)} |")
    (greedy_mean, greedy_worse), (better_mean, better_worse) = against(greedy), against(better)
    out.append("")
    out.append(f"- against greedy fusion: {greedy_mean} over {len(rows)} rows, worse on {greedy_worse} "
               f"(target: never worse, better on average)")
    out.append(f"- against the better of greedy and priority fusion: {better_mean}, worse on {better_worse}")


def joint(rows, out):
    out.append("| graph | n | default | best pipeline | ms | placement | scheduling | fusion | pl+sch | pl+fu | sch+fu "
               "| **joint** (spread) | vs default | vs best pipeline |")
    out.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    vs_default, vs_pipeline, beats_all = [], [], 0
    for r in rows:
        j, p = r["joint_ms"], r.get("pairs", {})
        alone = [r.get("placement_ms"), r.get("scheduling_ms"), r.get("fusion_ms")] + [p.get(k) for k in
                                                                                      ("pl+sch", "pl+fu", "sch+fu")]
        beats_all += all(x is None or j < x for x in alone)
        if not r.get("default_oom"):
            vs_default.append(j / r["default_ms"] - 1)
        vs_pipeline.append(j / r["best_heuristic_pipeline_ms"] - 1)
        out.append(f"| {r['graph']} | {r['devices']} | {ms(r['default_ms'])}{'*' if r.get('default_oom') else ''} | "
                   f"{r['best_heuristic']} | {ms(r['best_heuristic_pipeline_ms'])} | "
                   + " | ".join(ms(x) for x in alone)
                   + f" | {learned(r)} | {pct(vs_default[-1]) if not r.get('default_oom') else '–'} | "
                   f"{pct(vs_pipeline[-1])} |")
    out.append("")
    out.append(f"- against the default (one device, FIFO, no fusion): {pct(max(vs_default)) if vs_default else '–'} at "
               f"worst over the {len(vs_default)} rows where it fits (target: at most -33 % on every one)")
    out.append(f"- against the best heuristic pipeline: {against(vs_pipeline)[0]} "
               f"(target: -10 %); below each task alone and every pair on {beats_all} of {len(rows)} rows")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="JSON files written by benchmarks/decisions --out")
    ap.add_argument("--experiment", choices=["placement", "scheduling", "fusion", "joint"], action="append",
                    help="only these experiments (default: every one found)")
    ap.add_argument("--out", help="write the tables here instead of standard output")
    a = ap.parse_args()
    rows = load(a.files)
    out = []
    for name, table in (("placement", placement), ("scheduling", scheduling), ("fusion", fusion), ("joint", joint)):
        mine = sorted((r for r in rows if r["experiment"] == name), key=lambda r: (r["graph"], r["devices"]))
        if not mine or (a.experiment and name not in a.experiment):
            continue
        out.append(f"### {name} ({len(mine)} rows)")
        out.append("")
        try:
            table(mine, out)
        except KeyError as e:
            sys.exit(f"decisions_table: a {name} row lacks {e} (expected the fields benchmarks/decisions writes)")
        out.append("")
    text = "\n".join(out)
    if a.out:
        with open(a.out + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(a.out + ".tmp", a.out)
    else:
        print(text)


if __name__ == "__main__":
    main()
