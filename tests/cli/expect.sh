#!/bin/sh
# Runs a command and asserts its exit status and its stderr (or stdout) text:
#   expect.sh [--stdout] CODE REGEX... -- COMMAND ARGS...
# Every extended regular expression REGEX must match some line of the chosen stream.
stream=stderr
if [ "$1" = "--stdout" ]; then stream=stdout; shift; fi
code=$1; shift
n=0
for a in "$@"; do
  [ "$a" = "--" ] && break
  n=$((n + 1))
done
if [ "$n" -eq "$#" ]; then echo "expect.sh: missing '--' before the command" >&2; exit 2; fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
i=0
for a in "$@"; do
  i=$((i + 1))
  [ "$i" -le "$n" ] && printf '%s\n' "$a" >> "$tmp/regexes"
done
shift $((n + 1))
"$@" > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
status=0
if [ "$rc" -ne "$code" ]; then
  echo "FAIL: exit status $rc, expected $code" >&2
  status=1
fi
while IFS= read -r re; do
  if ! grep -E -q -e "$re" "$tmp/$stream"; then
    echo "FAIL: no line of $stream matches: $re" >&2
    status=1
  fi
done < "$tmp/regexes"
if [ "$status" -ne 0 ]; then
  echo "--- command: $*" >&2
  echo "--- stdout:" >&2; cat "$tmp/stdout" >&2
  echo "--- stderr:" >&2; cat "$tmp/stderr" >&2
fi
exit $status
