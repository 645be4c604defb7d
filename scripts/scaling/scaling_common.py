"""scaling_common.py — shared by scripts/scaling/weak and scripts/scaling/strong: the machine
description (a key = value file, overridable by flags), the grid and micro-batch chosen for a
point, and one batch script per point written through the launch templates of scripts/launch/,
then submitted (bsub / sbatch / sh) or printed. Python 3 standard library only."""

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAUNCHERS = {
    "mpirun": ("mpirun.sh", ["sh"]),
    "lsf": ("lsf-jsrun.sh", ["bsub"]),  # bsub < job.sh: #BSUB lines are read from stdin
    "slurm": ("slurm-srun.sh", ["sbatch"]),
}
# The models of the paper's Table I and the rest of axonn's presets (models/gpt_presets.c):
# name -> (layers, hidden, heads, seq, vocab).
PRESETS = {
    "gpt2-small": (12, 768, 12, 1024, 50257),
    "gpt2-medium": (24, 1024, 16, 1024, 50257),
    "gpt2-large": (36, 1280, 20, 1024, 50257),
    "gpt2-xl": (48, 1600, 25, 1024, 50257),
    "gpt-12b": (48, 4512, 24, 512, 51200),
    "gpt-24b": (48, 6336, 36, 512, 51200),
    "gpt-50b": (96, 6528, 48, 512, 51200),
    "gpt-100b": (96, 9360, 60, 512, 51200),
    "gpt-5b": (24, 4096, 32, 2048, 51200),
    "gpt-10b": (32, 5120, 40, 2048, 51200),
    "gpt-20b": (32, 7168, 56, 2048, 51200),
    "gpt-40b": (38, 9216, 72, 2048, 51200),
    "gpt-80b": (42, 12288, 96, 2048, 51200),
}
MACHINE_KEYS = {
    "launcher": str, "gpus_per_node": int, "cores_per_rank": int, "gpus_per_rank": int,
    "peak_tflops": float, "gpu_memory_gib": float, "device": str, "precision": str,
    "account": str, "queue": str, "time": int, "axonn": str, "train_args": str,
    "hostfile": str, "max_micro_batch": int, "modules": str,
}
DEFAULTS = {
    "launcher": "mpirun", "gpus_per_node": 1, "cores_per_rank": 1, "gpus_per_rank": 1,
    "peak_tflops": 0.0, "gpu_memory_gib": 0.0, "device": "cpu", "precision": "fp32",
    "account": "", "queue": "", "time": 30, "axonn": "bin/axonn", "train_args": "",
    "hostfile": "", "max_micro_batch": 0, "modules": "",
}


class PlanError(Exception):
    pass


def read_machine(path):
    """key = value lines, # comments; unknown keys are an error."""
    machine = dict(DEFAULTS)
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = line.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or key not in MACHINE_KEYS:
                raise PlanError("%s:%d: expected one of %s = value" %
                                (path, number, ", ".join(sorted(MACHINE_KEYS))))
            try:
                machine[key] = MACHINE_KEYS[key](value) if value else DEFAULTS[key]
            except ValueError:
                raise PlanError("%s:%d: %s = %r is not a %s" %
                                (path, number, key, value, MACHINE_KEYS[key].__name__))
    return machine


def add_machine_args(p):
    p.add_argument("--machine", metavar="FILE",
                   help="machine description (key = value; see scripts/scaling/machines/)")
    for key, kind in MACHINE_KEYS.items():
        if key == "train_args":  # --train-args adds to the machine's instead
            continue
        p.add_argument("--" + key.replace("_", "-"), dest="m_" + key, type=kind, default=None,
                       metavar=key.upper(), help="overrides the machine file's %s" % key)
    p.add_argument("--out", default="build/scaling", help="where job directories go")
    p.add_argument("--steps", type=int, default=11,
                   help="steps per run (11: the paper's, the last 10 timed)")
    p.add_argument("--micro-batch", type=int, default=0,
                   help="micro-batch for every point (0: chosen per point)")
    p.add_argument("--seq", type=int, help="sequence length of custom LxCxNH models (512)")
    p.add_argument("--vocab", type=int, help="vocabulary of custom LxCxNH models (51200)")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the job scripts and submit commands; submit nothing")
    p.add_argument("--train-args", dest="extra", default="",
                   help="more flags for every axonn train (appended to the machine's)")


def machine_from_args(args):
    machine = read_machine(args.machine) if args.machine else dict(DEFAULTS)
    for key in MACHINE_KEYS:
        value = getattr(args, "m_" + key, None)
        if value is not None:
            machine[key] = value
    if machine["launcher"] not in LAUNCHERS:
        raise PlanError("launcher %r is not one of %s" %
                        (machine["launcher"], ", ".join(LAUNCHERS)))
    return machine


def model_dims(spec, args):
    """A preset name or LxCxNH -> dict(name, layers, hidden, heads, seq, vocab, preset)."""
    if spec in PRESETS:
        l, h, nh, s, v = PRESETS[spec]
        s = args.seq or s
        v = args.vocab or v
        return dict(name=spec, preset=spec, layers=l, hidden=h, heads=nh, seq=s, vocab=v)
    try:
        l, h, nh = (int(x) for x in spec.split("x"))
    except ValueError:
        raise PlanError("model %r is neither a preset (%s) nor LxCxNH like 4x128x4" %
                        (spec, ", ".join(PRESETS)))
    if h % nh:
        raise PlanError("model %s: hidden %d is not divisible by heads %d" % (spec, h, nh))
    return dict(name=spec, preset=None, layers=l, hidden=h, heads=nh, seq=args.seq or 512,
                vocab=args.vocab or 51200)


def params(m):
    l, h, v, s = m["layers"], m["hidden"], m["vocab"], m["seq"]
    return 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_g_inter(gpus, model, machine, precision):
    """Smallest number of stages whose weights and gradients take at most half of a GPU's memory
    (the optimizer state lives on the host); 1 where device memory is unlimited (CPU)."""
    usable = [d for d in divisors(gpus) if d <= model["layers"]]
    if machine["gpu_memory_gib"] <= 0:
        return 1
    per_param = 8 if precision == "fp32" else 4
    budget = 0.5 * machine["gpu_memory_gib"] * 2 ** 30
    for d in usable:
        if params(model) * per_param / d <= budget:
            return d
    return usable[-1]


def choose_micro_batch(shard, g_inter, cap):
    """Largest divisor of the per-row shard giving at least 2 micro-batches per stage."""
    target = shard if g_inter == 1 else max(1, shard // (2 * g_inter))
    if cap > 0:
        target = min(target, cap)
    return max(d for d in divisors(shard) if d <= target)


def point(gpus, model, batch, g_inter, machine, args):
    """One run: the grid, the micro-batch, the label."""
    if g_inter is None:
        g_inter = choose_g_inter(gpus, model, machine, machine["precision"])
    if gpus % g_inter:
        raise PlanError("%d GPUs do not split into %d pipeline stages" % (gpus, g_inter))
    if g_inter > model["layers"]:
        raise PlanError("%d stages exceed the %d layers of %s" %
                        (g_inter, model["layers"], model["name"]))
    g_data = gpus // g_inter
    if batch % g_data:
        raise PlanError("batch %d is not divisible by G_data %d (%d GPUs, G_inter %d)" %
                        (batch, g_data, gpus, g_inter))
    micro = args.micro_batch or choose_micro_batch(batch // g_data, g_inter,
                                                   machine["max_micro_batch"])
    label = "%04d-%s" % (gpus, model["name"])
    return dict(gpus=gpus, model=model, batch=batch, g_inter=g_inter, g_data=g_data,
                micro=micro, label=label)


def train_command(pt, machine, args, job_dir):
    m = pt["model"]
    cmd = [machine["axonn"], "train"]
    if m["preset"]:
        cmd += ["--model", m["preset"], "--seq", str(m["seq"]), "--vocab", str(m["vocab"])]
    else:
        cmd += ["--layers", str(m["layers"]), "--hidden", str(m["hidden"]), "--heads",
                str(m["heads"]), "--seq", str(m["seq"]), "--vocab", str(m["vocab"])]
    cmd += ["--batch", str(pt["batch"]), "--micro-batch", str(pt["micro"]),
            "--g-inter", str(pt["g_inter"]), "--g-data", str(pt["g_data"]),
            "--steps", str(args.steps), "--timing-skip", "1", "--timing-steps",
            str(max(1, args.steps - 1)), "--val-steps", "0", "--device", machine["device"],
            "--precision", machine["precision"]]
    if machine["peak_tflops"] > 0:
        cmd += ["--peak-tflops", repr(machine["peak_tflops"])]
    cmd += shlex.split(machine["train_args"]) + shlex.split(args.extra)
    cmd += ["--metrics", os.path.join(job_dir, "metrics.csv"),
            "--summary", os.path.join(job_dir, "summary.json")]
    return cmd


def launch_command(pt, machine, job_dir, study, script):
    template, _ = LAUNCHERS[machine["launcher"]]
    cmd = [os.path.join(ROOT, "scripts", "launch", template), "-n", str(pt["gpus"]),
           "--cores-per-rank", str(machine["cores_per_rank"]),
           "--gpus-per-rank", str(machine["gpus_per_rank"]),
           "--job-name", "axonn-%s-%s" % (study, pt["label"]),
           "--time", str(machine["time"]), "--output", os.path.join(job_dir, "job.out"),
           "--workdir", os.getcwd(), "--batch", script]
    multi_node = pt["gpus"] > machine["gpus_per_node"]
    if machine["launcher"] != "mpirun" or (machine["hostfile"] and multi_node):
        cmd += ["--per-node", str(min(machine["gpus_per_node"], pt["gpus"]))]
    if machine["launcher"] == "mpirun" and machine["hostfile"]:
        cmd += ["--hostfile", machine["hostfile"]]
    if machine["account"]:
        cmd += ["--account", machine["account"]]
    if machine["queue"]:
        cmd += ["--queue", machine["queue"]]
    if machine["modules"]:
        cmd += ["--modules", machine["modules"]]
    return cmd


def write_job(pt, machine, args, study):
    """Writes OUT/STUDY/LABEL/job.sh through the launch template; returns (dir, script)."""
    job_dir = os.path.abspath(os.path.join(args.out, study, pt["label"]))
    os.makedirs(job_dir, exist_ok=True)
    for stale in ("summary.json", "metrics.csv", "job.out"):
        if os.path.exists(os.path.join(job_dir, stale)):
            os.remove(os.path.join(job_dir, stale))
    script = os.path.join(job_dir, "job.sh")
    cmd = launch_command(pt, machine, job_dir, study, script) + ["--"] + \
        train_command(pt, machine, args, job_dir)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if done.returncode != 0:
        raise PlanError("launch template failed: %s\n%s" % (" ".join(map(shlex.quote, cmd)),
                                                            done.stderr.strip()))
    return job_dir, script


def submit(job_dir, script, machine, print_only):
    """Returns True when the job was submitted (or, for mpirun, ran) successfully."""
    _, submit_cmd = LAUNCHERS[machine["launcher"]]
    from_stdin = machine["launcher"] == "lsf"
    cmd = submit_cmd if from_stdin else submit_cmd + [script]
    shown = " ".join(map(shlex.quote, cmd)) + (" < " + shlex.quote(script) if from_stdin else "")
    if print_only:
        with open(script) as f:
            sys.stdout.write("### %s\n%s" % (script, f.read()))
        print("### submit: %s\n" % shown)
        return True
    print("+ %s" % shown, flush=True)
    if machine["launcher"] == "mpirun":  # run here, one after the other
        with open(os.path.join(job_dir, "job.out"), "w") as out:
            rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
        if rc != 0:
            print("  failed (exit %d); see %s" % (rc, os.path.join(job_dir, "job.out")))
        return rc == 0
    if from_stdin:
        with open(script) as f:
            return subprocess.call(cmd, stdin=f) == 0
    return subprocess.call(cmd) == 0


def describe(pt):
    m = pt["model"]
    n = params(m)
    size = "%.3g B" % (n / 1e9) if n >= 1e9 else "%.3g M" % (n / 1e6)
    return ("%5d GPUs  %-10s L=%d C=%d NH=%d T=%d V=%d (%s params)  batch %d  "
            "grid %d x %d  micro-batch %d" %
            (pt["gpus"], m["name"], m["layers"], m["hidden"], m["heads"], m["seq"], m["vocab"],
             size, pt["batch"], pt["g_inter"], pt["g_data"], pt["micro"]))


def run_study(study, points, machine, args):
    print("%s scaling: %d point(s), launcher %s, %s jobs in %s" %
          (study, len(points), machine["launcher"], "printing" if args.print_only else
           "submitting", os.path.join(args.out, study)))
    ok = True
    for pt in points:
        print(describe(pt), flush=True)
        job_dir, script = write_job(pt, machine, args, study)
        ok = submit(job_dir, script, machine, args.print_only) and ok
    return 0 if ok else 1


def main_guard(fn):
    try:
        sys.exit(fn())
    except (PlanError, OSError) as e:
        print("%s: error: %s" % (os.path.basename(sys.argv[0]), e), file=sys.stderr)
        sys.exit(2)


def parse_gpu_list(text):
    try:
        gpus = [int(x) for x in text.split(",")]
    except ValueError:
        raise PlanError("--gpus %r is not a comma list of GPU counts" % text)
    if not gpus or min(gpus) < 1:
        raise PlanError("--gpus %r: counts must be positive" % text)
    return gpus


def new_parser(description):
    return argparse.ArgumentParser(description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
