#!/bin/sh
# The CUDA backend as a plugin (src/backend/backend.c, plugin_load.c): bin/axonn links no CUDA
# library, and `--device cuda` loads libaxonn-cuda.so from $AXONN_PLUGIN_DIR, else the binary's
# directory, else ../lib/axonn/ from it. Every way that can fail ends with exactly one line on
# stderr saying what to do and exit status 1: no plugin, a file that is not a shared object, a
# library the plugin needs missing, a plugin of another ABI version, one that is not a plugin,
# one that needs symbols this axonn lacks. The fake plugins are a few lines of C built here
# with $CC (cc); the real one (where nvcc built it) must load and, on a machine without a GPU,
# fail with the CUDA runtime's reason. A CPU run never touches the plugin.
. "$(dirname "$0")/testlib.sh"
CC=${CC:-cc}
skip() { echo "skipped: $*"; }
BIN_DIR=$(cd "$(dirname "$AXONN")" && pwd)
REAL=$BIN_DIR/libaxonn-cuda.so
RUN="train --device cuda --layers 1 --hidden 32 --heads 2 --seq 16 --batch 2 --steps 2 \
  --val-steps 0 --quiet"

# expect_plugin_error DIR "needle"... -- CMD...: with AXONN_PLUGIN_DIR=DIR (empty: unset), CMD exits
# with status 1 and exactly one line on stderr that contains every needle
expect_plugin_error() {
  dir=$1; shift
  : >"$TMP/needles"
  while [ "$1" != "--" ]; do printf '%s\n' "$1" >>"$TMP/needles"; shift; done
  shift
  if [ -n "$dir" ]; then
    AXONN_PLUGIN_DIR=$dir "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
  else
    env -u AXONN_PLUGIN_DIR "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
  fi
  what="${dir:+AXONN_PLUGIN_DIR=$dir }$*"
  if [ "$rc" -ne 1 ]; then fail "$what: exit $rc, expected 1"; cat "$TMP/err"; return; fi
  lines=$(wc -l <"$TMP/err")
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr:"; cat "$TMP/err"; return; fi
  while IFS= read -r needle; do
    grep -q -F -- "$needle" "$TMP/err" || { fail "$what: stderr lacks '$needle':"; cat "$TMP/err"; }
  done <"$TMP/needles"
}

# ---------------------------------------------------------------- no CUDA library in bin/axonn
CUDA_LIBS='lib(cuda|cudart|cublas|cublasLt|nvrtc|nvJitLink|cufft|curand|cusparse|cusolver|nccl)\.so'
checked=0
if command -v ldd >/dev/null 2>&1; then
  ldd "$AXONN" >"$TMP/ldd" 2>&1 || fail "ldd $AXONN"
  grep -E "$CUDA_LIBS" "$TMP/ldd" && fail "bin/axonn loads a CUDA library (ldd above)"
  checked=1
fi
if command -v readelf >/dev/null 2>&1; then
  readelf -d "$AXONN" | grep NEEDED >"$TMP/needed"
elif command -v objdump >/dev/null 2>&1; then
  objdump -p "$AXONN" | grep NEEDED >"$TMP/needed"
fi
if [ -e "$TMP/needed" ]; then
  grep -q 'libc\.so' "$TMP/needed" || fail "no DT_NEEDED entries read from $AXONN"
  grep -E "$CUDA_LIBS" "$TMP/needed" && fail "bin/axonn's DT_NEEDED names a CUDA library (above)"
  checked=1
fi
[ $checked -eq 1 ] || skip "neither ldd nor readelf/objdump: bin/axonn's libraries not checked"

# ---------------------------------------------------------------- no plugin
mkdir -p "$TMP/empty"
expect_plugin_error "$TMP/empty" "--device cuda: no libaxonn-cuda.so in AXONN_PLUGIN_DIR=$TMP/empty" \
  "built without CUDA (no nvcc at build time), or libaxonn-cuda.so is not next to the binary" \
  "rebuild where nvcc is found, or set AXONN_PLUGIN_DIR" -- "$AXONN" $RUN
# a copy of the binary without one: both places it looks are named
mkdir -p "$TMP/alone"
cp "$AXONN" "$TMP/alone/axonn"
expect_plugin_error "" "no libaxonn-cuda.so in $TMP/alone or $TMP/alone/../lib/axonn" \
  "rebuild where nvcc is found" -- "$TMP/alone/axonn" $RUN

# ---------------------------------------------------------------- broken plugins
mkdir -p "$TMP/zero" "$TMP/garbage"
: >"$TMP/zero/libaxonn-cuda.so"
echo "this is not a shared object, only text in its place" >"$TMP/garbage/libaxonn-cuda.so"
for d in zero garbage; do
  expect_plugin_error "$TMP/$d" "--device cuda: cannot load $TMP/$d/libaxonn-cuda.so: " \
    "it is not a plugin for this machine: rebuild it (make) or remove it" -- "$AXONN" $RUN
done
# a CPU run does not load the plugin, broken or not
AXONN_PLUGIN_DIR=$TMP/garbage "$AXONN" train --layers 1 --hidden 32 --heads 2 --seq 16 \
  --batch 2 --steps 2 --val-steps 0 --quiet >"$TMP/cpu.out" 2>&1 ||
  { fail "--device cpu with a broken plugin around"; cat "$TMP/cpu.out"; }

# ---------------------------------------------------------------- fake plugins, built here
# fake NAME DIR [LDFLAGS...]: compiles $TMP/NAME.c into DIR/libaxonn-cuda.so
fake() {
  name=$1 dir=$2; shift 2
  mkdir -p "$dir"
  "$CC" -shared -fPIC -o "$dir/libaxonn-cuda.so" "$TMP/$name.c" "$@" 2>"$TMP/cc.err" ||
    { fail "building the fake plugin $name:"; cat "$TMP/cc.err"; }
}
if command -v "$CC" >/dev/null 2>&1; then
  cat >"$TMP/abi99.c" <<'EOF'
struct plugin { int abi_version; const char *name; };
static const struct plugin p = {99, "cuda"};
const struct plugin *ax_backend_plugin_v1(void) { return &p; }
EOF
  cat >"$TMP/noentry.c" <<'EOF'
int ax_backend_plugin_v2(void) { return 2; }
EOF
  cat >"$TMP/undef.c" <<'EOF'
extern int ax_no_such_function(void);
int ax_backend_plugin_v1(void) { return ax_no_such_function(); }
EOF
  cat >"$TMP/gone.c" <<'EOF'
int axonn_gone(void) { return 0; }
EOF
  cat >"$TMP/needsgone.c" <<'EOF'
extern int axonn_gone(void);
int ax_backend_plugin_v1(void) { return axonn_gone(); }
EOF
  fake abi99 "$TMP/abi99"
  expect_plugin_error "$TMP/abi99" \
    "--device cuda: $TMP/abi99/libaxonn-cuda.so has plugin ABI version 99" \
    "this axonn needs version 1: " \
    "use the plugin built with this axonn (make)" -- "$AXONN" $RUN
  fake noentry "$TMP/noentry"
  expect_plugin_error "$TMP/noentry" \
    "$TMP/noentry/libaxonn-cuda.so is not an axonn backend plugin (no ax_backend_plugin_v1)" \
    -- "$AXONN" $RUN
  fake undef "$TMP/undef"
  expect_plugin_error "$TMP/undef" "undefined symbol: ax_no_such_function" \
    "it was built with another axonn: use the plugin built with this one" -- "$AXONN" $RUN
  # a library the plugin needs is missing (as libcublas is on a node without CUDA)
  mkdir -p "$TMP/lib"
  "$CC" -shared -fPIC -o "$TMP/lib/libaxonn_gone.so" "$TMP/gone.c" ||
    fail "building libaxonn_gone.so"
  fake needsgone "$TMP/needsgone" -L"$TMP/lib" -laxonn_gone
  rm -f "$TMP/lib/libaxonn_gone.so"
  expect_plugin_error "$TMP/needsgone" "cannot load $TMP/needsgone/libaxonn-cuda.so: " \
    "libaxonn_gone.so: cannot open shared object file" \
    "; load the CUDA libraries, e.g. \`module load cuda\`, or add them to LD_LIBRARY_PATH" \
    -- "$AXONN" $RUN
else
  skip "no C compiler ($CC): no fake plugins (ABI version, entry point, symbols, libraries)"
fi

# ---------------------------------------------------------------- the real plugin
if [ ! -e "$REAL" ]; then
  skip "no $REAL (built without nvcc): the real plugin not loaded"
else
  # every axonn function the plugin calls is exported by bin/axonn (-rdynamic, whole libaxonn.a)
  if command -v nm >/dev/null 2>&1; then
    nm -D --defined-only "$AXONN" | awk '{ print $3 }' | sort >"$TMP/exported"
    nm -D --undefined-only "$REAL" | awk '$2 ~ /^axk?_/ { print $2 }' | sort >"$TMP/wanted"
    [ -s "$TMP/wanted" ] || fail "nm -D found no ax_ symbols wanted by $REAL"
    comm -23 "$TMP/wanted" "$TMP/exported" >"$TMP/missing"
    [ -s "$TMP/missing" ] &&
      { fail "bin/axonn does not export what the plugin needs:"; cat "$TMP/missing"; }
    nm -D --defined-only "$REAL" | awk '$2 == "T" { print $3 }' >"$TMP/plugin-exports"
    [ "$(cat "$TMP/plugin-exports")" = ax_backend_plugin_v1 ] ||
      { fail "the plugin exports more than ax_backend_plugin_v1:"; head "$TMP/plugin-exports"; }
  else
    skip "no nm: the plugin's symbols not compared with bin/axonn's"
  fi
  # next to the binary, and in ../lib/axonn/ of an installed layout
  mkdir -p "$TMP/inst/bin" "$TMP/inst/lib/axonn"
  cp "$AXONN" "$TMP/inst/bin/axonn"
  cp "$REAL" "$TMP/inst/lib/axonn/"
  for exe in "$AXONN" "$TMP/inst/bin/axonn"; do
    env -u AXONN_PLUGIN_DIR "$exe" $RUN >"$TMP/real.out" 2>"$TMP/real.err"; rc=$?
    if [ $rc -eq 0 ]; then
      echo "cli_plugin: $exe --device cuda trained on a GPU"
    else
      expect_plugin_error "" "--device cuda: no usable GPU (cudaGetDeviceCount: " -- "$exe" $RUN
    fi
  done
fi

finish
