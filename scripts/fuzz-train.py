#!/usr/bin/env python3
"""fuzz-train.py — random `axonn train` configurations (grids, precisions, optimizers, codecs,
sync schemes, overlaps, links, checkpoints), drawn from a seed, each run on a small model
with real MPI, and what a user expects of each checked:

  - it ends: no hang (a step timeout of 60 s, and a wall limit), no crash (no signal, no MPI
    abort but the trainer's own), and a refusal is exactly one `axonn: error:` line, once;
    its data-parallel replicas and its tied embedding copies end alike (the run compares
    them and warns otherwise);
  - a lossless configuration (fp32, no lossy codec) trains as one process does: every step's
    loss within 1e-4 of the 1-rank run with the same optimizer settings; bf16/fp16 within 3%;
  - a run that checkpoints at step 3 (and goes on to step 6) is the straight run, and resumed
    from that checkpoint it continues bit for bit (every loss of steps 4-6 equal to its own;
    where the cost model decides from what it measures at each start, the straight run may
    decide apart, and the resume decides on the checkpointed run's measured costs); a lossless
    one resumed on another grid of as many ranks (where its flags allow that grid) continues
    within the tolerance above.

Three draws in four leave out the flags the trainer is known to refuse together (Draw.fit:
the later flag of each such pair), so that more of them run; the rest keep them, and check
that the refusal is one clear line. The same seed draws the same configurations, and no check
depends on a time (where the cost model's measured decisions may differ between two runs, each
check holds for either decision); a check that fails names the configuration and the command.
Exit status 1 when any failed.

  usage: [MPIEXEC=mpiexec] scripts/fuzz-train.py [--bin bin/axonn] [--count N] [--seed S]
                               [--out DIR] [--ranks-max 4] [--keep]
"""
import argparse
import csv
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

MODEL = ("--layers 4 --hidden 32 --heads 4 --seq 16 --vocab 128 --batch 8 --threads 1 "
         "--val-steps 0 --lr-schedule constant --warmup 0 --step-timeout 60 --peak-tflops 1").split()
STEPS = 6
RESUME_AT = 3
WALL_S = 240
# the losses of a lossless layout against one process's, relative
LOSSLESS_TOL = 1e-4
REDUCED_PRECISION_TOL = 3e-2
# the share of draws that leave out what the trainer is known to refuse (Draw.fit)
FIT_SHARE = 0.75
GRID_FLAGS = ("--g-inter", "--gx", "--gy", "--gz", "--g-data")
# optimizer and model settings the reference run copies
OPTIMIZER_FLAGS = ("--grad-clip", "--weight-decay", "--precision", "--loss-scaling", "--dropout",
                   "--attention-dropout")


class Draw:
    """One configuration: ranks, flags, and what it promises."""

    def __init__(self, rng, ranks_max):
        self.rng = rng
        self.flags = []
        self.ranks = rng.choice([r for r in (1, 2, 2, 3, 4, 4, 4) if r <= ranks_max])
        self.grid()
        self.optimizer()
        self.compression()
        self.communication()
        self.checkpoints()
        # most draws leave out what the trainer is known to refuse, so that more of them run;
        # the rest keep it, and check that the refusal is one clear line
        if self.maybe(FIT_SHARE):
            self.fit()
        self.lossy_codec = self.lossy()

    def maybe(self, p):
        return self.rng.random() < p

    def pick(self, *xs):
        return self.rng.choice(xs)

    def add(self, *xs):
        self.flags += [str(x) for x in xs]

    def drop(self, flag):
        """Removes flag and its value."""
        if flag in self.flags:
            i = self.flags.index(flag)
            del self.flags[i:i + 2]

    def fit(self):
        """Leaves out the flags of the trainer's most frequent refusals (src/train/train_config.c):
        the later of each conflicting pair, as a user would."""
        pipeline = int(self.value("--g-inter")) >= 2
        fp32 = self.value("--precision") is None and self.value("--allreduce-dtype") is None
        if not pipeline or self.value("--precision") is not None:
            self.drop("--compress-backprop")  # between stages, fp32 gradients only
        if self.value("--compress") is not None or self.memory:
            self.drop("--optimizer")  # codecs and memory checkpoints use the host's state
            if self.value("--compress") is not None:
                self.drop("--allreduce-dtype")  # codecs encode fp32 gradients
        if not pipeline and self.value("--sparse-embedding-sync") in ("zen", "allgather"):
            self.drop("--sparse-embedding-sync")  # one stage's LM head makes wte's gradient dense
        if self.value("--sparse-embedding-sync") == "allgather":
            self.drop("--fuse-embedding-sync")
        tensor = any(int(self.value(f)) > 1 for f in ("--gx", "--gy", "--gz"))
        if not fp32 or tensor or self.value("--progress") is not None:
            self.drop("--dp-sync-early")  # the backward's blocks sum fp32 gradients as they go
        if self.value("--emulate-link") is not None and self.value("--allreduce") == "mpi":
            self.drop("--allreduce")  # MPI_Iallreduce would move its bytes past the emulator

    def lossy(self):
        """Whether a flag of the draw changes the sums (a lossy codec, bf16 gradients)."""
        codec = self.value("--compress")
        return (codec not in (None, "identity") or self.value("--compress-backprop") is not None
                or self.value("--allreduce-dtype") is not None)

    def grid_dims(self):
        dims = [1] * 5  # G_inter, Gx, Gy, Gz, G_data
        r = self.ranks
        while r > 1:
            p = 2 if r % 2 == 0 else r
            dims[self.rng.randrange(5)] *= p
            r //= p
        for flag, d in zip(GRID_FLAGS, dims):
            self.add(flag, d)

    def grid(self):
        self.grid_dims()
        if self.maybe(.3):
            self.add("--micro-batch", self.pick(1, 2, 4))
        if self.maybe(.1):
            self.add("--pipeline-limit", self.pick(1, 2))
        for t in ("--tp-oar", "--tp-ors", "--tp-oag", "--tp-ag-cache"):
            if self.maybe(.1):
                self.add(t, self.pick(0, 1))
        if self.maybe(.2):
            self.add("--checkpoint-activations")
            if self.maybe(.5):
                self.add("--ac", self.pick(1, 2))

    def optimizer(self):
        if self.maybe(.3):
            self.add("--precision", self.pick("bf16", "fp16"))
        if self.maybe(.2):
            self.add("--loss-scaling", self.pick("dynamic", "off"))
        if self.maybe(.2):
            self.add("--optimizer", "device")
        if self.maybe(.2):
            self.add("--offload", self.pick(0, 1))
        if self.maybe(.4):
            self.add("--grad-clip", self.pick(0, 1, 0.1))
        if self.maybe(.1):
            self.add("--weight-decay", 0.1)
        if self.maybe(.15):
            self.add("--dropout", 0.1)
            if self.maybe(.5):  # GPT's third, the attention probabilities'
                self.add("--attention-dropout", 0.1)
        if self.maybe(.15):
            self.add("--progress", "thread")
        if self.maybe(.1):
            self.add("--optimizer-threads", 2)

    def compression(self):
        if self.maybe(.35):
            codec = self.pick("onebit", "dgc", "powersgd", "tbq", "topk:ratio=0.1", "auto",
                              "identity")
            self.add("--compress", codec)
            if codec == "auto":
                self.add("--compress-codec", self.pick("onebit", "dgc", "powersgd"))
            if self.maybe(.3):
                self.add("--compress-sync", self.pick("ring", "ps", "ag"))
            if self.maybe(.3):
                self.add("--compress-min-bytes", self.pick(0, "4K"))
            if self.maybe(.2):
                self.add("--compress-stages", self.pick("all", 0.5))
            if self.maybe(.4):
                self.add("--compress-warmup", self.pick(0, 2))
        if self.maybe(.15):
            self.add("--compress-backprop", self.pick("powersgd", "powersgd:rank=2"))

    def communication(self):
        if self.maybe(.2):
            self.add("--allreduce", self.pick("mpi", "ring", "rhd"))
        if self.maybe(.15):
            self.add("--allreduce-dtype", "bf16")
        if self.maybe(.15):
            self.add("--bucket-size", self.pick(1000, 100000))
        if self.maybe(.15):
            self.add("--coarsening", self.pick(1, 2, 4))
        if self.maybe(.15):
            self.add("--dp-sync-early", 1)
        if self.maybe(.1):
            self.add("--fuse-embedding-sync", 1)
        if self.maybe(.15):
            self.add("--sparse-embedding-sync", self.pick("zen", "allgather", "dense"))
        if self.maybe(.25):
            self.add("--ranks-per-node", self.pick(1, 2), "--emulate-link",
                     self.pick("10Gbps", "1Gbps,20us"))

    def checkpoints(self):
        self.memory = self.maybe(.15)
        if self.memory:
            self.add("--memory-checkpoint-every", self.pick(1, 2), "--replicas", self.pick(1, 2))

    def regridded(self, rng):
        """The flags with another grid of as many ranks (and the micro-batch left to the rule)."""
        drop, flags, i = GRID_FLAGS + ("--micro-batch",), [], 0
        while i < len(self.flags):
            if self.flags[i] in drop:
                i += 2
                continue
            flags.append(self.flags[i])
            i += 1
        redraw = Draw.__new__(Draw)
        redraw.rng, redraw.ranks, redraw.flags = rng, self.ranks, []
        redraw.grid_dims()
        return redraw.flags + flags

    def value(self, flag):
        return self.flags[self.flags.index(flag) + 1] if flag in self.flags else None

    def measured_decisions(self):
        """Whether the cost model decides the compressed parts from what it measures at each
        start (--compress auto; a lossy codec over an emulated link with --compress-min-bytes
        auto): two runs of the configuration may decide differently."""
        codec = self.value("--compress")
        data = int(self.value("--g-data") or 1) >= 2
        return data and (codec == "auto" or (
            self.lossy_codec and codec not in (None, "identity")
            and self.value("--emulate-link") is not None
            and self.value("--compress-min-bytes") is None))

    def reference_flags(self):
        out = []
        for f in OPTIMIZER_FLAGS:
            if self.value(f) is not None:
                out += [f, self.value(f)]
        return out


class Runner:
    def __init__(self, binary, out):
        self.binary, self.out = binary, out

    def run(self, name, ranks, flags, steps, extra=()):
        d = os.path.join(self.out, name)
        os.makedirs(d, exist_ok=True)
        launcher = os.environ.get("MPIEXEC", "mpiexec").split()
        cmd = (launcher + ["-n", str(ranks)] if ranks > 1 else []) + [self.binary, "train"]
        cmd += MODEL + flags + ["--steps", str(steps), "--metrics", os.path.join(d, "m.csv"),
                                "--memory-dir", d, "--run-name", name] + list(extra)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=WALL_S,
                               stdin=subprocess.DEVNULL, cwd=d)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired as e:
            rc = 124
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            subprocess.run(["pkill", "-9", "-f", d], capture_output=True)
        losses = []
        try:
            with open(os.path.join(d, "m.csv")) as f:
                losses = [row["loss"] for row in csv.DictReader(f)]
        except (OSError, KeyError):
            pass
        return rc, err, losses, " ".join(cmd)


def verdict_of_end(rc, err, losses):
    """'ok', 'refused' (one clear line), or a failure's name."""
    lines = [l for l in err.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("axonn: error:")]
    if rc == 124:
        return "HANG (step timeout)" if any("--step-timeout" in l for l in errors) else "HANG"
    if rc < 0 or rc > 128 or any(k in err for k in ("Segmentation", "BAD TERMINATION",
                                                    "Assertion", "core dumped")):
        return "CRASH"
    if rc != 0:
        others = [l for l in lines if not l.startswith("axonn: warning:")
                  and not l.startswith("axonn: error:")]
        return "refused" if len(errors) == 1 and not others else "UNCLEAR ERROR"
    if len(losses) != STEPS or not all(math.isfinite(float(x)) for x in losses):
        return "NO LOSSES" if len(losses) != STEPS else "NON-FINITE"
    if "data-parallel replicas of" in err:  # the run's own end check: they must be alike
        return "REPLICAS DIFFER"
    if "tied embedding's copies on the first" in err:  # the same for the tied pair
        return "TIED COPIES DIFFER"
    return "ok"


def check_one_process(runner, refs, c, losses):
    """A lossless layout's losses against the 1-rank run with the same optimizer settings
    (refs: those runs, by their flags)."""
    key = " ".join(c.reference_flags())
    if key not in refs:
        refs[key] = runner.run("ref%d" % len(refs), 1, c.reference_flags(), STEPS)
    rc, err, ref, cmd = refs[key]
    if rc != 0 or len(ref) != STEPS:
        return "ONE PROCESS FAILED", "%s: %s" % (cmd, err.strip().splitlines()[-1:])
    tol = REDUCED_PRECISION_TOL if c.value("--precision") else LOSSLESS_TOL
    worst = max(abs(float(x) - float(y)) / float(y) for x, y in zip(losses, ref))
    note = "losses within %.1e of one process's" % worst
    return ("DIFFERS FROM ONE PROCESS" if worst > tol else "ok"), note


def check_resume(runner, c, name, losses, rng, verdict, note):
    """The run checkpointed at RESUME_AT and resumed: bit for bit on its own grid; on another
    grid of as many ranks (where the configuration allows it), lossless ones within the
    tolerance of one process's."""
    ck = os.path.join(runner.out, name + "r", "ck")
    keep = ["--checkpoint-dir", ck, "--checkpoint-every", str(RESUME_AT)]
    # the checkpointed run goes on to the end (so a recipe that follows --steps is the same in
    # it and in the resume), its later checkpoint goes, and the resume must continue it
    # exactly; where the cost model decides from what it measures, the straight run may decide
    # apart from the checkpointed one, whose figures the resume takes back
    measured = c.measured_decisions()
    first = runner.run(name + "r", c.ranks, c.flags, STEPS, keep)
    if first[0] == 0 and not measured and first[2] != losses:
        return "CHECKPOINTS CHANGE THE RUN", "straight %s, checkpointed %s" % (losses, first[2])
    if first[0] == 0:
        for d in os.listdir(ck):
            if d.startswith("step-") and int(d[5:]) > RESUME_AT:
                shutil.rmtree(os.path.join(ck, d))
        shutil.copytree(ck, ck + "-other")
    second = runner.run(name + "r", c.ranks, c.flags, STEPS, keep + ["--resume"])
    if first[0] or second[0]:
        said = (second[1] or first[1]).strip().splitlines()
        return "RESUME FAILED", said[-1] if said else "exit %d, %d" % (first[0], second[0])
    if second[2] != first[2]:
        return "RESUME DIFFERS", "straight %s, resumed %s" % (first[2], second[2])
    if measured:
        note += "; resumed on the checkpointed run's measured costs"
    if c.lossy_codec or c.ranks == 1:
        return verdict, note
    other = c.regridded(rng)
    third = runner.run(name + "r", c.ranks, other, STEPS,
                       ["--checkpoint-dir", ck + "-other", "--resume"])
    if third[0] != 0:  # the new grid refused what the flags ask: not a finding
        return verdict, note + "; not resumable on %s" % " ".join(other[:10])
    tol = REDUCED_PRECISION_TOL if c.value("--precision") else LOSSLESS_TOL
    worst = max(abs(float(x) - float(y)) / float(y)
                for x, y in zip(third[2][RESUME_AT:], losses[RESUME_AT:]))
    if len(third[2]) != STEPS or worst > tol:
        return "RESUME ON A GRID DIFFERS", "%s: straight %s, resumed %s" % (
            " ".join(other[:10]), losses, third[2])
    return verdict, note + "; resumed on %s within %.1e" % (" ".join(other[:10]), worst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="bin/axonn")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--ranks-max", type=int, default=4)
    ap.add_argument("--keep", action="store_true", help="keep every run's files")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="axonn-fuzz-")
    os.makedirs(out, exist_ok=True)
    runner = Runner(os.path.abspath(a.bin), out)
    rng = random.Random(a.seed)
    refs, counts, failed = {}, {}, 0
    for i in range(a.count):
        c = Draw(rng, a.ranks_max)
        name = "c%04d" % i
        rc, err, losses, cmd = runner.run(name, c.ranks, c.flags, STEPS)
        verdict, note = verdict_of_end(rc, err, losses), ""
        if verdict == "ok" and not c.lossy_codec and c.ranks > 1:
            verdict, note = check_one_process(runner, refs, c, losses)
        if verdict == "ok" and not c.memory:
            # another generator: the draws that follow do not depend on this one's outcome
            regrid = random.Random("%d-%d" % (a.seed, i))
            verdict, note = check_resume(runner, c, name, losses, regrid, verdict, note)
        counts[verdict] = counts.get(verdict, 0) + 1
        bad = verdict not in ("ok", "refused")
        failed += bad
        shown = err.strip().splitlines()[-1] if verdict == "refused" and err.strip() else note
        print("%s %-22s %s | %s" % (name, verdict, " ".join(c.flags), shown), flush=True)
        if bad:
            print("  command: %s" % cmd, flush=True)
        elif not a.keep:
            for suffix in ("", "r"):
                shutil.rmtree(os.path.join(out, name + suffix), ignore_errors=True)
    print("fuzz-train: seed %d, %d configuration(s): %s" % (
        a.seed, a.count, ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items()))))
    if not a.out and not a.keep and not failed:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
