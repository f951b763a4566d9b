#!/usr/bin/env bash
# Runs the GPU suite (tests/gpu: every preset x backend trained end to end, and the learning checks) on a
# GPU machine, writes a JSON + Markdown report, and prints a short table last.
#
#   scripts/gpu-suite.sh [--out DIR] [--workers N] [--budget SECONDS] [--no-install] [-- PYTEST_ARGS...]
#
# On the project's offline H200 (repository root; `.gpu` built by scripts/build_gpu_bundle.py and carried,
# see docs/gpu-suite.md):
#   source .gpu/env.sh && scripts/gpu-suite.sh --out "$OUT"
# It installs this checkout (editable, no deps) and any wheels in .whl/, runs `pytest -m gpu tests/gpu` with
# pytest-xdist when it is there (the tests share one GPU; --workers defaults to one per test), and writes into DIR: gpu-report.json,
# gpu-report.md, pytest.log and logs.tgz (every command's log). Copy the two reports to docs/ to commit them.
# --budget stops pytest in time to still write the report (tests not finished then show as "not run").
# Exit status: pytest's (0: all passed), 124 when --budget stopped it, or 3 when the install fails.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT_DIR=gpu-suite-out
WORKERS=${GPU_SUITE_WORKERS:-auto}
BUDGET=${GPU_SUITE_BUDGET_S:-0}
PY=${PYTHON:-python3}
INSTALL=1
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT_DIR=$2; shift 2 ;;
        --workers) WORKERS=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        --) shift; break ;;
        *) break ;;
    esac
done
started=$(date +%s)
WORK=$(mktemp -d /tmp/gpu-suite.XXXXXX)
mkdir -p "$OUT_DIR" "$WORK/results" "$WORK/logs"

install() {
    $PY -m pip install -q --no-deps --no-build-isolation -e . || return 1
    if ls .whl/*.whl >/dev/null 2>&1; then $PY -m pip install -q --no-deps .whl/*.whl || return 1; fi
}
if [ "$INSTALL" = 1 ]; then
    echo "== install" >&2
    install >"$WORK/logs/pip.log" 2>&1 || { cat "$WORK/logs/pip.log" >&2; echo "error: install failed" >&2; exit 3; }
fi
$PY scripts/gpu_report.py env >"$WORK/env.json"
cat "$WORK/env.json" >&2

limit=()
if [ "$BUDGET" -gt 0 ]; then limit=(timeout --signal=INT --kill-after=30 "$BUDGET"); fi

# The tests there are to be: any without a result at the end (a crash, the budget) shows as "not run".
$PY -m pytest tests/gpu -m gpu -p no:cacheprovider --collect-only -q "$@" 2>/dev/null | grep '::' >"$WORK/expected.txt"
# auto: one worker per test. They share the GPU, and each mostly waits on its own small-batch generation.
if [ "$WORKERS" = auto ]; then WORKERS=$(wc -l <"$WORK/expected.txt"); fi
parallel=()
# -n 0 for one worker: the project's addopts would start two (xdist workers slow the budget's interrupt, which then
# ends in timeout's kill: seen on a loaded 2-core machine)
if $PY -c "import xdist" 2>/dev/null; then
    if [ "$WORKERS" -gt 1 ]; then parallel=(-n "$WORKERS"); else parallel=(-n 0); fi
fi

echo "== pytest ${parallel[*]}" >&2
# Each test process uses a few CPU threads, not all: several run side by side.
GRPO_SKILL_GPU_RESULTS="$WORK/results" GRPO_SKILL_GPU_LOGS="$WORK/logs" OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} \
    "${limit[@]}" $PY -m pytest tests/gpu -m gpu -p no:cacheprovider -ra --durations=0 "${parallel[@]}" "$@" \
    2>&1 | tee "$OUT_DIR/pytest.log" >&2
status=${PIPESTATUS[0]}
if [ "$status" = 124 ]; then  # timeout's status: the budget, not a failure of pytest's own
    echo "gpu-suite: the --budget of $BUDGET s ran out and stopped pytest (the KeyboardInterrupt text above is that" \
         "stop); the report lists the tests it cut short as not run" >&2
fi

tar czf "$OUT_DIR/logs.tgz" -C "$WORK" logs results 2>/dev/null
$PY scripts/gpu_report.py report --env "$WORK/env.json" --results "$WORK/results" \
    --wall-seconds $(( $(date +%s) - started )) --pytest-status "$status" --expected "$WORK/expected.txt" --out "$OUT_DIR/gpu-report"
exit "$status"
