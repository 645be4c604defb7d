#!/usr/bin/env python3
"""simulate-trace-compare.py — a simulated step against a measured one, op by op.

Reads two traces in axonn's format (`axonn simulate --trace` and `axonn train --trace`, both
Chrome trace JSON: events with "name", "tid" (the rank), "dur" in us, args.step) and prints,
for every rank and event name (forward, backward, send, recv-wait, allreduce, optimizer, ...),
the count and the milliseconds a traced step in each, and the measured over the simulated time.
It is how docs/simulator.md finds which op a prediction mis-prices.

  scripts/simulate-trace-compare.py SIM_TRACE RUN_TRACE
"""
import collections
import json
import sys


def per_step(path):
    """{rank: {name: [count, ms]}} a step, and the steps traced."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    table = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    steps = set()
    for e in events:
        if e.get("ph") != "X":
            continue
        step = e.get("args", {}).get("step")
        if step is not None:
            steps.add(step)
        row = table[e["tid"]][e["name"]]
        row[0] += 1
        row[1] += e["dur"] / 1e3
    n = max(len(steps), 1)
    return {t: {k: [c / n, ms / n] for k, (c, ms) in names.items()} for t, names in table.items()}, n


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    sim, n_sim = per_step(argv[1])
    run, n_run = per_step(argv[2])
    print("a step (simulated: %d traced, measured: %d)" % (n_sim, n_run))
    print("%-5s %-20s %8s %10s %8s %10s %9s" % ("rank", "event", "n sim", "ms sim", "n run",
                                               "ms run", "run/sim"))
    for rank in sorted(set(sim) | set(run)):
        names = set(sim.get(rank, {})) | set(run.get(rank, {}))
        for name in sorted(names):
            cs, ms = sim.get(rank, {}).get(name, [0, 0.0])
            cr, mr = run.get(rank, {}).get(name, [0, 0.0])
            ratio = "%9.3f" % (mr / ms) if ms > 0 else "%9s" % "-"
            print("%-5d %-20s %8.1f %10.3f %8.1f %10.3f %s" % (rank, name, cs, ms, cr, mr, ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
