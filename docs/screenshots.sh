#!/usr/bin/env bash
# Regenerates the report screenshots in README.md (docs/report-*.png): the
# report of the example kernels with a confirm run, rendered by headless
# Chromium. Needs the pinned nightly (`bash .ci/setup`) and chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p cargo-gpucheck
out=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/readme-report
target/debug/cargo-gpucheck gpucheck report --manifest-path example-kernels/Cargo.toml --confirm -q -o "$out"
races=$(grep -l '<h1>src/races.rs' "$out"/src/*.html | head -1)
shot() { # PAGE PNG WIDTHxHEIGHT
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$out/.chromium" \
    --window-size="$3" --screenshot="$2" "file://$1" 2>/dev/null
}
shot "$out/index.html" docs/report-overview.png 1400,720
shot "$races" docs/report-source.png 1400,720
echo "wrote docs/report-overview.png and docs/report-source.png from $out"
