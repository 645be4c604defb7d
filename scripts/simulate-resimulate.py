#!/usr/bin/env python3
"""simulate-resimulate.py — the saved cases of a `scripts/simulate-validate.sh` pass simulated
again by another binary, on the same profiles, against the same measured runs.

For every CASE.sim.json in DIR (beside it CASE.profile and CASE.run.json, as the validation
script leaves them) it reruns the simulation with the options recorded in the saved summary
(`provenance.command_line`) and prints, per case, the saved prediction, the new one and the
measured batch time (the mean over the run's timed steps, with their min and max), each error
against the measured. With --pooled, each shape's cost figures (every key but the shape, the
stage depth and the speed tables) are the median over that shape's profiles in DIR, so that
one disturbed profile does not decide its case: a diagnostic, not a measurement.
Measures nothing: how a change to the cost model moves the predictions of a pass already taken
(docs/benchmarks.md, "The simulator on four shapes, quiet").

  scripts/simulate-resimulate.py [--pooled] AXONN DIR
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

KEPT = {"device", "threads", "precision", "micro_batch", "seq", "hidden", "heads", "vocab",
        "dropout", "attention_dropout", "stage_blocks", "concurrency_speed", "waiting_speed"}


def read_profile(path):
    """[(key, value)] of a profile file, in order."""
    pairs = []
    for line in open(path):
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            pairs.append((key.strip(), value.strip()))
    return pairs


def pooled_profiles(cases, out_dir):
    """{case: path}: each case's profile with its shape's median cost figures."""
    shapes = {}
    for case in cases:
        shapes.setdefault(os.path.basename(case).split("-")[0], []).append(case)
    paths = {}
    for members in shapes.values():
        profiles = {c: read_profile(c + ".profile") for c in members}
        median = {}
        for key, _ in next(iter(profiles.values())):
            if key not in KEPT:
                median[key] = statistics.median(float(dict(p)[key]) for p in profiles.values())
        for case, pairs in profiles.items():
            path = os.path.join(out_dir, os.path.basename(case) + ".profile")
            with open(path, "w") as f:
                for key, value in pairs:
                    f.write("%s = %s\n" % (key, repr(median[key]) if key in median else value))
            paths[case] = path
    return paths


def simulate(axonn, saved, profile, summary):
    """The batch time (ms) of the saved simulation's options rerun on `profile`."""
    args, argv, i = [], saved["provenance"]["command_line"][1:], 0
    while i < len(argv):
        if argv[i] in ("--summary", "--profile"):
            i += 2
            continue
        args.append(argv[i])
        i += 1
    subprocess.run([axonn] + args + ["--profile", profile, "--summary", summary], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return json.load(open(summary))["timing"]["batch_time_s"] * 1e3


def main(argv):
    pooled = "--pooled" in argv
    argv = [a for a in argv if a != "--pooled"]
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    axonn, where = argv[1], argv[2]
    cases = sorted(f[:-len(".sim.json")] for f in glob.glob(os.path.join(where, "*.sim.json")))
    with tempfile.TemporaryDirectory() as tmp:
        profiles = pooled_profiles(cases, tmp) if pooled else {c: c + ".profile" for c in cases}
        print("%-28s %16s %16s %26s" % ("case", "saved (error)", "new (error)",
                                        "measured mean (min-max)"))
        for case in cases:
            saved = json.load(open(case + ".sim.json"))
            run = json.load(open(case + ".run.json"))["timing"]
            meas = run["batch_time_s"] * 1e3
            old = saved["timing"]["batch_time_s"] * 1e3
            new = simulate(axonn, saved, profiles[case], os.path.join(tmp, "s.json"))
            err = lambda p: 100 * (p - meas) / meas
            print("%-28s %7.1f (%+6.1f%%) %7.1f (%+6.1f%%) %9.1f (%.1f-%.1f)" % (
                os.path.basename(case), old, err(old), new, err(new), meas,
                run["batch_time_min_s"] * 1e3, run["batch_time_max_s"] * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
