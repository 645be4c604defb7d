#!/usr/bin/env python3
"""trace_causality.py TRACE.json — checks that a merged `axonn train --trace` file keeps cause
before effect across ranks: on every row, stage s+1's forward of a micro-batch starts after stage
s's forward of it ended, and stage s's backward of it after stage s+1's backward ended (the
message between them is sent after the one and received before the other). Ranks' clocks that
disagree (trace origins set apart) break it. Prints each break and exits 1 on any; 0 and how
many pairs were checked otherwise."""
import json
import re
import sys

TOLERANCE_US = 0.01  # the file's timestamps carry three decimals of a microsecond


def main(path):
    events = json.load(open(path))["traceEvents"]
    place = {}  # tid -> (stage, row)
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            m = re.search(r"stage (\d+), row (\d+)", e["args"]["name"])
            if m:
                place[e["tid"]] = (int(m.group(1)), int(m.group(2)))
    spans = {}  # (kind, stage, row, step, mb) -> (start, end)
    for e in events:
        if e.get("ph") == "X" and e["name"] in ("forward", "backward") and e["tid"] in place:
            s, r = place[e["tid"]]
            spans[(e["name"], s, r, e["args"]["step"], e["args"]["mb"])] = (e["ts"], e["ts"] + e["dur"])
    checked, broken = 0, 0
    for (kind, s, r, step, mb), (start, end) in sorted(spans.items()):
        after = spans.get((kind, s + 1 if kind == "forward" else s - 1, r, step, mb))
        if after is None:
            continue
        checked += 1
        if after[0] < end - TOLERANCE_US:
            broken += 1
            print("%s of step %d micro-batch %d: stage %d (row %d) ends at %.3f us, stage %d starts it at %.3f"
                  % (kind, step, mb, s, r, end, s + 1 if kind == "forward" else s - 1, after[0]))
    if checked == 0:
        print("no pipeline message to check in %s" % path)
        return 1
    print("%d messages checked, %d received before they were sent" % (checked, broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
