#!/usr/bin/env bash
# `make test`'s two passes at once: the whole suite on SQLite, and the tests that touch the
# database again on PostgreSQL (tests/pg.py; where PostgreSQL is not installed that pass
# says so and passes). Most of the suite's time is spent waiting (model replies, polls,
# the browser), so two passes side by side take little more than the longer one.
#
#   tests/both_passes.sh BIN PG_TESTS...
#
# The PostgreSQL pass's output is kept and printed after the SQLite pass's; the exit
# status is 0 only when both passed. Each pass has temporary folders of its own.
set -u
bin=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/talekeeper-tests-XXXXXX")
pg_log="$work/postgresql.log"

"$bin/python" -m pytest -p no:cacheprovider --basetemp="$work/postgresql" \
    --durations=15 --db=postgresql -m "not model and not browser" "$@" >"$pg_log" 2>&1 &
pg=$!
# Stopped (Ctrl-C, a CI timeout): the PostgreSQL pass stops too, and its output is shown.
trap 'kill "$pg" 2>/dev/null; wait "$pg"; cat "$pg_log"; rm -rf "$work"; exit 130' INT TERM

echo "== The SQLite pass (the PostgreSQL pass runs beside it; its output follows)"
"$bin/python" -m pytest --durations=15 --basetemp="$work/sqlite"
sqlite=$?
wait "$pg"
postgresql=$?
trap - INT TERM

echo
echo "== The PostgreSQL pass"
cat "$pg_log"
rm -rf "$work"
echo
echo "== SQLite pass: exit status $sqlite; PostgreSQL pass: exit status $postgresql"
[ "$sqlite" -eq 0 ] && [ "$postgresql" -eq 0 ]
