#!/usr/bin/env python3
"""tfevents_check.py — an independent reader of axonn's TensorBoard event files (tests only).

Reads every record of FILE with TensorBoard's framing (uint64 length, masked CRC-32C of the
length, data, masked CRC-32C of the data), recomputing both CRCs with a bitwise CRC-32C that
shares nothing with src/core/crc32c.c, decodes each record's data with `protoc --decode_raw`
(Debian's protobuf-compiler), and checks the Event fields: the first record holds wall_time
(1) and file_version (3) "brain.Event:2"; every other one wall_time, step (2) and a summary (5)
of values (1) each with a tag (1) and a simple_value (2, a float). With a metrics CSV, every
step's scalars must equal the CSV's figures (as float32) and the steps must be the CSV's.

Usage: tfevents_check.py EVENTFILE [METRICS.csv]   (exit 0: good; 1: a message per problem)
"""
import csv
import re
import struct
import subprocess
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    at = 0
    while at < len(blob):
        if len(blob) - at < 12:
            raise ValueError("truncated record header at byte %d" % at)
        head = blob[at:at + 8]
        (length,) = struct.unpack("<Q", head)
        (hcrc,) = struct.unpack("<I", blob[at + 8:at + 12])
        if hcrc != masked(head):
            raise ValueError("length CRC mismatch at byte %d" % at)
        data = blob[at + 12:at + 12 + length]
        if len(data) != length or len(blob) < at + 16 + length:
            raise ValueError("truncated record at byte %d" % at)
        (dcrc,) = struct.unpack("<I", blob[at + 12 + length:at + 16 + length])
        if dcrc != masked(data):
            raise ValueError("data CRC mismatch at byte %d" % at)
        yield data
        at += 16 + length


def decode_raw(data):
    out = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True, check=True)
    return out.stdout.decode()


def parse(text):
    """protoc's text format as nested lists of (field, value)."""
    stack = [[]]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            done = stack.pop()
            stack[-1][-1] = (stack[-1][-1][0], done)
            continue
        m = re.match(r"^(\d+) \{$", line)
        if m:
            stack[-1].append((int(m.group(1)), None))
            stack.append([])
            continue
        m = re.match(r"^(\d+): (.*)$", line)
        if not m:
            raise ValueError("unexpected protoc line: " + line)
        stack[-1].append((int(m.group(1)), m.group(2)))
    return stack[0]


def fixed(text, fmt):
    """protoc prints fixed32/fixed64 as 0x..., the bits of the float/double."""
    bits = int(text, 16)
    return struct.unpack(fmt, struct.pack("<I" if fmt == "<f" else "<Q", bits))[0]


def string(text):
    return text.strip('"')


def main():
    path = sys.argv[1]
    bad = []
    blob = open(path, "rb").read()
    steps = {}
    for i, data in enumerate(records(blob)):
        ev = dict()
        for field, value in parse(decode_raw(data)):
            ev.setdefault(field, []).append(value)
        if 1 not in ev or not 1e9 < fixed(ev[1][0], "<d") < 1e10:
            bad.append("record %d: no plausible wall_time" % i)
        if i == 0:
            if ev.get(3) != ['"brain.Event:2"']:
                bad.append("first record: file_version %r" % ev.get(3))
            continue
        step = int(ev.get(2, ["0"])[0])
        if 5 not in ev:
            bad.append("record %d: no summary" % i)
            continue
        values = {}
        for field, value in ev[5][0]:
            if field != 1 or not isinstance(value, list):
                bad.append("record %d: summary field %d" % (i, field))
                continue
            v = dict(value)
            values[string(v[1])] = fixed(v[2], "<f")
        steps[step] = values
    if len(sys.argv) > 2:
        rows = list(csv.DictReader(open(sys.argv[2])))
        if sorted(steps) != [int(r["step"]) for r in rows]:
            bad.append("steps %s, the CSV has %s" % (sorted(steps), [r["step"] for r in rows]))
        for r in rows:
            got = steps.get(int(r["step"]), {})
            for key in ("loss", "lr", "grad_norm", "val_loss", "batch_ms", "tokens_per_s",
                        "tflops"):
                if r[key] == "":
                    if key in got:
                        bad.append("step %s: %s written where the CSV has none" % (r["step"], key))
                    continue
                want = struct.unpack("<f", struct.pack("<f", float(r[key])))[0]
                tol = 1e-6 if key in ("loss", "lr", "grad_norm", "val_loss") else 1e-5
                if key not in got or abs(got[key] - want) > tol * abs(want):
                    bad.append("step %s: %s %r, the CSV %r" % (r["step"], key, got.get(key), want))
    for b in bad:
        print("%s: %s" % (path, b))
    print("%s: %d records, %d steps" % (path, len(steps) + 1, len(steps)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
