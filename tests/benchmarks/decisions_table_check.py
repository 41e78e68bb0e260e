#!/usr/bin/env python3
"""Checks benchmarks/decisions_table.py on rows whose targets are known by hand: the scheduling
averages against both baselines, the placement counts and geometric mean, and the refusals (a row
in two files, a file that is not a list of rows, a row without a field its table needs).

    python3 tests/benchmarks/decisions_table_check.py SOURCE_DIR
"""

import json
import os
import subprocess
import sys
import tempfile


def run(script, *files):
    return subprocess.run([sys.executable, script, *files], capture_output=True, text=True)


def expect(cond, what):
    if not cond:
        sys.exit(f"decisions_table_check: {what}")


def main():
    script = os.path.join(sys.argv[1], "benchmarks", "decisions_table.py")
    sched = [
        # learned 2 % below critical path (the better rule), 1 % below the own order
        {"experiment": "scheduling", "graph": "g", "devices": 2, "critical_path_ms": 10.0, "heft_rank_ms": 11.0,
         "own_ms": 9.9, "best_heuristic": "own", "best_heuristic_ms": 9.9, "learned_ms": 9.8,
         "learned_spread_ms": 0.0, "learned_from": ["sample"]},
        # learned equal to the HEFT rank's order, which is also the best of the three
        {"experiment": "scheduling", "graph": "g", "devices": 4, "critical_path_ms": 8.0, "heft_rank_ms": 5.0,
         "own_ms": 6.0, "best_heuristic": "heft_rank", "best_heuristic_ms": 5.0, "learned_ms": 5.0,
         "learned_spread_ms": 0.0, "learned_from": ["mode"]},
    ]
    place = [
        # 10 % below a best heuristic with headroom (lower bound far below)
        {"experiment": "placement", "graph": "p", "devices": 2, "ops": 3, "lower_bound_ms": 5.0,
         "best_heuristic": "heft", "best_heuristic_ms": 10.0, "learned_ms": 9.0, "learned_oom": False},
        # equal to a best heuristic at its lower bound: at or below, not strictly
        {"experiment": "placement", "graph": "p", "devices": 4, "ops": 3, "lower_bound_ms": 4.0,
         "best_heuristic": "m_etf", "best_heuristic_ms": 4.0, "learned_ms": 4.0, "learned_oom": False},
    ]
    with tempfile.TemporaryDirectory() as d:
        a, b, bad = (os.path.join(d, n) for n in ("a.json", "b.json", "bad.json"))
        with open(a, "w") as f:
            json.dump(sched, f)
        with open(b, "w") as f:
            json.dump(place, f)
        r = run(script, a, b)
        expect(r.returncode == 0, f"two good files: exit {r.returncode}: {r.stderr}")
        # (9.8 / 10 - 1 + 0) / 2 = -1 %; (9.8 / 9.9 - 1 + 0) / 2 = -0.505 %
        expect("-1.00 % on average over 2 rows" in r.stdout, "the average against the issue's baseline\n" + r.stdout)
        expect("the placement heuristic's own order: -0.51 % on average, worse on 0" in r.stdout,
               "the average against the three\n" + r.stdout)
        expect("at or below the best heuristic on 2, strictly below on 1" in r.stdout, "placement counts\n" + r.stdout)
        expect("over the 1 rows whose best heuristic is more than 5 % above its lower bound: 0.9000" in r.stdout,
               "placement geometric mean\n" + r.stdout)
        r = run(script, a, a)
        expect(r.returncode != 0 and "is in both" in r.stderr, "a row in two files was not refused")
        with open(bad, "w") as f:
            json.dump({"rows": []}, f)
        r = run(script, bad)
        expect(r.returncode != 0 and "expected the benchmark's list of rows" in r.stderr, "a JSON object was taken")
        with open(bad, "w") as f:
            json.dump([{k: v for k, v in sched[0].items() if k != "heft_rank_ms"}], f)
        r = run(script, bad)
        expect(r.returncode != 0 and "lacks 'heft_rank_ms'" in r.stderr, "a row without a field was taken")
    print("decisions_table_check: ok")


if __name__ == "__main__":
    main()
