#!/usr/bin/env bash
# `make test`'s two passes at once: the whole suite on SQLite, and the tests that touch the
# database again on PostgreSQL (src/talekeeper_testkit/pg.py; where PostgreSQL is not installed that pass
# says so and passes). Most of the suite's time is spent waiting (model replies, polls,
# the browser), so two passes side by side take little more than the longer one.
#
#   tests/both_passes.sh BIN PG_TESTS...
#
# The PostgreSQL pass's output is kept and printed after the SQLite pass's; the exit
# status is 0 only when both passed. Each pass has temporary folders of its own. Each pass
# prints its 50 slowest tests, and the end says how long each pass took (wall time).
set -u
# The embedded models on one thread each (TALEKEEPER_THREADS, passed on to every Talekeeper a
# test starts: tests/conftest.py): the two passes already keep both cores of the reference
# machine busy, and llama.cpp's second thread mostly waits for a core the other pass holds
# (a 10-turn game beside a busy core: 74 s on two threads, 61 s on one).
export TALEKEEPER_THREADS="${TALEKEEPER_THREADS:-1}"
bin=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/talekeeper-tests-XXXXXX")
pg_log="$work/postgresql.log"

started=$(date +%s)
(
    # pytest as this subshell's own child, so that stopping the subshell stops it too.
    "$bin/python" -m pytest -p no:cacheprovider --basetemp="$work/postgresql" \
        --durations=50 --db=postgresql --db-free=run -m "not model and not browser" "$@" &
    child=$!
    trap 'kill "$child" 2>/dev/null' TERM
    wait "$child"
    status=$?
    echo "$(($(date +%s) - started))" >"$work/postgresql.seconds"
    exit $status
) >"$pg_log" 2>&1 &
pg=$!
# Stopped (Ctrl-C, a CI timeout): the PostgreSQL pass stops too, and its output is shown.
trap 'kill "$pg" 2>/dev/null; wait "$pg"; cat "$pg_log"; rm -rf "$work"; exit 130' INT TERM

# The modules that never ask for a database run the same on either pass: those under the
# PostgreSQL pass's folders run there, which evens the two passes out (the SQLite pass,
# the whole suite, is the longer).
elsewhere=()
for folder in "$@"; do elsewhere+=(--db-free-elsewhere "$folder"); done
echo "== The SQLite pass (the PostgreSQL pass runs beside it; its output follows)"
"$bin/python" -m pytest --durations=50 --basetemp="$work/sqlite" "${elsewhere[@]}"
sqlite=$?
sqlite_seconds=$(($(date +%s) - started))
wait "$pg"
postgresql=$?
trap - INT TERM

pg_seconds=$(cat "$work/postgresql.seconds" 2>/dev/null || echo "?")

echo
echo "== The PostgreSQL pass"
cat "$pg_log"
rm -rf "$work"
echo
echo "== SQLite pass: exit status $sqlite, ${sqlite_seconds} s; PostgreSQL pass: exit status \
$postgresql, ${pg_seconds} s (wall time, side by side: $(($(date +%s) - started)) s)"
[ "$sqlite" -eq 0 ] && [ "$postgresql" -eq 0 ]
