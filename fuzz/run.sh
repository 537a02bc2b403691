#!/bin/sh
# Runs one fuzz target for a campaign: ./run.sh TARGET SECONDS [libFuzzer options...]
# Seeds come from seeds/TARGET; the corpus grows in corpus/TARGET, crashes land in
# artifacts/TARGET (both ignored by git).
set -e
cd "$(dirname "$0")"
target=$1
seconds=$2
shift 2
mkdir -p "corpus/$target" "seeds/$target"
RUSTC_BOOTSTRAP=1 exec cargo fuzz run -s none -a "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$@"
