#!/usr/bin/env python3
"""safetensors_check.py DIR MODEL.bin — an independent reader of `axonn export --format
safetensors` (tests/cli_export.sh), written from the safetensors format's specification and
Hugging Face's GPT-2 layout, sharing no code with axonn:
  - the file: an 8-byte little-endian header length N, N bytes of JSON (a dict of tensors,
    each {"dtype", "shape", "data_offsets": [begin, end]} relative to the data, plus an optional
    "__metadata__" of strings), then the data; the ranges cover the data exactly, without
    holes or overlaps, each as long as its dtype and shape say;
  - the names and shapes are GPT2Model's for config.json's dimensions (Conv1D weights
    [in, out]), F32, and nothing else is in the file;
  - every value equals llm.c's model file's (MODEL.bin, written by `axonn export` from the same
    checkpoint) after the layout change: Conv1D matrices transposed, wte without the padded
    vocabulary's rows.
Prints one line per finding and exits non-zero on any."""
import array, json, struct, sys

def fail(msg):
    print("safetensors_check: " + msg)
    sys.exit(1)

d, model = sys.argv[1], sys.argv[2]
cfg = json.load(open(d + "/config.json"))
for k in ("model_type", "n_embd", "n_layer", "n_head", "n_positions", "vocab_size"):
    if k not in cfg: fail("config.json lacks " + k)
if cfg["model_type"] != "gpt2" or cfg.get("architectures") != ["GPT2LMHeadModel"]:
    fail("config.json is not a GPT2LMHeadModel's")
C, L, T, V = cfg["n_embd"], cfg["n_layer"], cfg["n_positions"], cfg["vocab_size"]

raw = open(d + "/model.safetensors", "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n].decode("utf-8"))
data = raw[8 + n:]
meta = header.pop("__metadata__", {})
if not all(isinstance(v, str) for v in meta.values()): fail("__metadata__ values must be strings")

want = {"wte.weight": [V, C], "wpe.weight": [T, C], "ln_f.weight": [C], "ln_f.bias": [C]}
for l in range(L):
    p = "h.%d." % l
    want.update({p + "ln_1.weight": [C], p + "ln_1.bias": [C], p + "ln_2.weight": [C],
                 p + "ln_2.bias": [C], p + "attn.c_attn.weight": [C, 3 * C],
                 p + "attn.c_attn.bias": [3 * C], p + "attn.c_proj.weight": [C, C],
                 p + "attn.c_proj.bias": [C], p + "mlp.c_fc.weight": [C, 4 * C],
                 p + "mlp.c_fc.bias": [4 * C], p + "mlp.c_proj.weight": [4 * C, C],
                 p + "mlp.c_proj.bias": [C]})
if set(header) != set(want):
    fail("names differ from GPT2Model's: missing %s, extra %s"
         % (sorted(set(want) - set(header))[:5], sorted(set(header) - set(want))[:5]))
spans = []
for name, e in header.items():
    if e["dtype"] != "F32": fail("%s is %s, not F32" % (name, e["dtype"]))
    if e["shape"] != want[name]: fail("%s has shape %s, GPT-2's is %s" % (name, e["shape"], want[name]))
    b, en = e["data_offsets"]
    count = 1
    for s in e["shape"]: count *= s
    if en - b != 4 * count: fail("%s: %d bytes for %d floats" % (name, en - b, count))
    spans.append((b, en, name))
spans.sort()
at = 0
for b, en, name in spans:
    if b != at: fail("%s starts at %d, the previous tensor ends at %d (a hole or an overlap)" % (name, b, at))
    at = en
if at != len(data): fail("the tensors cover %d bytes of %d of data" % (at, len(data)))

def tensor(name):
    b, en = header[name]["data_offsets"]
    a = array.array("f")
    a.frombytes(data[b:en])
    if sys.byteorder != "little": a.byteswap()
    return a

# llm.c's model file: 256 int32 header, then the tensors in its order, [out, in] matrices
m = open(model, "rb").read()
h = struct.unpack("<256i", m[:1024])
if h[0] != 20240326 or h[1] != 3: fail("%s is not an llm.c fp32 model file" % model)
maxT, Vf, Lf, NH, Cf, Vp = h[2:8]
if (maxT, Vf, Lf, NH, Cf) != (T, V, L, cfg["n_head"], C): fail("config.json disagrees with the llm.c header")
vals = array.array("f")
vals.frombytes(m[1024:])
if sys.byteorder != "little": vals.byteswap()
pos = 0
def take(count):
    global pos
    pos += count
    return vals[pos - count:pos]
def same(name, ref, rows=None, cols=None):
    got = tensor(name)
    if rows is not None:  # ref is [rows, cols], the file holds its transpose [cols, rows]
        ref = array.array("f", (ref[r * cols + c] for c in range(cols) for r in range(rows)))
    if list(got) != list(ref): fail("%s differs from the llm.c model's values" % name)

wte = take(Vp * C)
same("wte.weight", wte[:V * C])
same("wpe.weight", take(T * C))
order = [("ln_1.weight", C, None), ("ln_1.bias", C, None), ("attn.c_attn.weight", 3 * C, C),
         ("attn.c_attn.bias", 3 * C, None), ("attn.c_proj.weight", C, C), ("attn.c_proj.bias", C, None),
         ("ln_2.weight", C, None), ("ln_2.bias", C, None), ("mlp.c_fc.weight", 4 * C, C),
         ("mlp.c_fc.bias", 4 * C, None), ("mlp.c_proj.weight", C, 4 * C), ("mlp.c_proj.bias", C, None)]
for name, rows, cols in order:  # llm.c stacks each kind over the layers
    per = rows * (cols or 1)
    for l in range(L):
        t = take(per)
        if cols: same("h.%d.%s" % (l, name), t, rows, cols)
        else: same("h.%d.%s" % (l, name), t)
same("ln_f.weight", take(C))
same("ln_f.bias", take(C))
if pos != len(vals): fail("the llm.c file holds %d floats more" % (len(vals) - pos))
print("safetensors_check: %d tensors, %d bytes of data: GPT-2's names and shapes (L=%d C=%d V=%d T=%d), "
      "contiguous ranges, every value the llm.c model's" % (len(header), len(data), L, C, V, T))
