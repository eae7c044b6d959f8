#!/usr/bin/env bash
# Writes cargo-gpucheck/link-order.txt: the functions of the release binary
# that checks of small PTX files run, by their mangled names, in the order
# the linker places them first (see build.rs). Run it again after a toolchain upgrade, a change of
# dependencies in Cargo.lock, or a change that adds or renames functions on
# the check's path: a name the binary no longer has is passed over (the
# same name without its hash still places the function, with the other
# copies of a generic function of that name), so an old list only costs
# some of the start-up it saved.
#
#   cargo-gpucheck/link-order.sh [PTX...]
#
# Needs valgrind (callgrind) and python3. The runs: `--help`, and a check of
# each PTX file given (default: the repository's own idioms file and the
# shared corpus's files under 16 KB, when ../shared is there), in both
# output formats. Functions that ran in more of the runs come first (the
# path every check takes), then those that ran more instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "link-order.sh: needs valgrind (callgrind)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "link-order.sh: needs python3" >&2; exit 1; }

cargo build --release -p cargo-gpucheck
bin="${CARGO_TARGET_DIR:-target}/release/cargo-gpucheck"

inputs=("$@")
if [ ${#inputs[@]} -eq 0 ]; then
  inputs=(analysis/tests/nvvm/idioms.ptx)
  if [ -d ../shared/corpus/ptx ]; then
    while IFS= read -r f; do inputs+=("$f"); done < <(find ../shared/corpus/ptx -name '*.ptx' -size -16k | sort)
  fi
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
  local name=$1
  shift
  # (a check that finds an error exits with 1: its profile counts as well; one that left none says so)
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$out/$name" "$bin" "$@" >/dev/null 2>&1 || true
  [ -s "$out/$name" ] || echo "link-order.sh: no profile of \`cargo-gpucheck $*\`: left out" >&2
}
run help gpucheck ptx --help
n=0
for f in "${inputs[@]}"; do
  n=$((n + 1))
  run "human.$n" gpucheck ptx "$f"
  run "json.$n" gpucheck ptx "$f" --message-format json
done
echo "link-order.sh: $(find "$out" -type f -size +0 | wc -l) of $((2 * n + 1)) runs profiled" >&2

python3 - "$bin" "$out"/* >cargo-gpucheck/link-order.txt <<'EOF'
import collections, os, re, sys

binary, profiles = os.path.basename(sys.argv[1]), sys.argv[2:]
runs, instructions = collections.Counter(), collections.Counter()
name_line = re.compile(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")
cost_line = re.compile(r"^([+-]?\d+|\*) (\d+)")
for path in profiles:
    objects, functions, ran = {}, {}, set()
    mine, fn, after_calls = False, None, False
    for line in open(path, errors="replace"):
        m = name_line.match(line.rstrip("\n"))
        if m:
            kind, key, name = m.groups()
            table = objects if kind.endswith("ob") else functions
            if name:
                table[key] = name
            if kind == "ob":
                mine = objects.get(key, "").endswith("/" + binary)
            elif kind == "fn":
                # (a recursive call's frame: the function itself)
                fn = re.sub(r"'\d+$", "", functions.get(key, ""))
            continue
        if line.startswith("calls="):
            after_calls = True
            continue
        c = cost_line.match(line)
        if c and after_calls:
            after_calls = False  # (the cost of the call: the callee's, not this function's)
        elif c and mine and fn and int(c.group(2)) > 0:
            instructions[fn] += int(c.group(2))
            ran.add(fn)
    runs.update(ran)

order = []
for f in sorted(instructions, key=lambda f: (-runs[f], -instructions[f])):
    # (callgrind's own frames, `(below main)`, and addresses without a name are no symbols;
    # a local copy's number, `.1234`, changes from build to build)
    f = re.sub(r"\.\d+$", "", f)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", f) and f not in order:
        order.append(f)
print("# The functions of cargo-gpucheck that checks of small PTX files run, by their")
print("# mangled names; the linker places them first and together, and then, by their")
print("# names without the hash, those of a build whose hashes differ (build.rs).")
print(f"# Written by cargo-gpucheck/link-order.sh from {len(profiles)} runs; do not edit by hand.")
print("\n".join(order))
EOF
echo "link-order.sh: $(grep -vc '^#' cargo-gpucheck/link-order.txt) functions in cargo-gpucheck/link-order.txt" >&2
