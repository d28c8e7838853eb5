#!/usr/bin/env bash
# Runs every test binary of the workspace (what `cargo test --workspace
# --all-targets` runs), several at a time: most of an end-to-end binary's
# time is spent waiting on its own local control plane, so binaries run side
# by side finish sooner than one after another. Each binary's output goes to
# a log that is printed when it fails; the slowest binaries start first
# (their times from the last run are kept in target/test-times).
#
#   BATCHGATE_TEST_JOBS=N   binaries at once (default 3; 1 = one at a time)
#   extra arguments         passed to every test binary (e.g. a name filter)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${BATCHGATE_TEST_JOBS:-3}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "BATCHGATE_TEST_JOBS must be a positive integer, not '$jobs'" >&2; exit 2; }
target_dir=${CARGO_TARGET_DIR:-target}
times="$target_dir/test-times"
logs=$(mktemp -d "${TMPDIR:-/tmp}/batchgate-tests.XXXXXX")

# Build every test target; cargo names each executable in its JSON messages.
if ! cargo test --workspace --all-targets --no-run --message-format=json-render-diagnostics \
  > "$logs/artifacts.json" 2> "$logs/build.log"; then
  cat "$logs/build.log" >&2
  exit 101
fi

# One line per binary: "<kind>:<name> <package dir> <executable>". Only
# what was built with the test profile (test harnesses, benches in test
# mode), not the plain binaries the integration tests start.
field() { sed -nE "s/.*\"$1\":\"([^\"]*)\".*/\1/p" <<< "$2"; }
list=()
while IFS= read -r line; do
  exe=$(field executable "$line")
  [[ -n "$exe" ]] || continue
  manifest=$(field manifest_path "$line")
  kind=$(sed -nE 's/.*"kind":\["([a-z-]+)".*/\1/p' <<< "$line")
  name=$(sed -nE 's/.*"target":\{[^}]*"name":"([^"]*)".*/\1/p' <<< "$line")
  list+=("$kind:$name $(dirname "$manifest") $exe")
done < <(grep '"reason":"compiler-artifact"' "$logs/artifacts.json" | grep -v '"executable":null' |
  grep -E '"profile":\{[^}]*"test":true')
[[ ${#list[@]} -gt 0 ]] || { echo "no test binaries found" >&2; exit 101; }

# Slowest first, by the last run's times; unknown ones (a fresh clone) first
# of all, end-to-end binaries before the rest.
last() { [[ -f "$times" ]] && awk -v n="$1" '$1 == n { print $2 }' "$times" | tail -1; }
ordered=$(for entry in "${list[@]}"; do
  name=${entry%% *}
  t=$(last "$name")
  if [[ -z "$t" ]]; then
    case "$name" in *:e2e_*) t=100000 ;; *) t=50000 ;; esac
  fi
  echo "$t $entry"
done | sort -rn -k1,1 | cut -d' ' -f2-)

start=$(date +%s)
declare -A pids=() began=()
# Interrupted: stop the binaries still running (their clusters go with them).
trap 'kill "${!pids[@]}" 2>/dev/null; exit 130' INT TERM
failed=()
: > "$logs/times"

finish() { # <pid> <exit code>
  local pid=$1 rc=$2 entry=${pids[$1]}
  local name=${entry%% *} took=$(($(date +%s) - ${began[$1]}))
  echo "$name $took" >> "$logs/times"
  local log="$logs/${name//[:\/]/_}.log"
  if [[ $rc -eq 0 ]]; then
    printf '%-45s ok      %4ds  %s\n' "$name" "$took" "$(grep -E '^test result:' "$log" | tail -1 | sed 's/test result: //')"
  else
    printf '%-45s FAILED  %4ds (exit %d)\n' "$name" "$took" "$rc"
    echo "----- $name output -----"
    cat "$log"
    echo "----- end of $name -----"
    failed+=("$name")
  fi
  unset "pids[$pid]"
}

# Binaries that measure the server against thousands of attacking
# connections on this machine's cores: beside other binaries they would
# measure the machine's load, not the server. They run after the rest, one
# at a time.
alone=" test:hostile test:e2e_hostile "
later=()
run() { # <entry> <args...>
  local entry=$1; shift
  local name dir exe
  read -r name dir exe <<< "$entry"
  local log="$logs/${name//[:\/]/_}.log"
  (cd "$dir" && CARGO_MANIFEST_DIR="$dir" exec "$exe" "$@") > "$log" 2>&1 &
  pids[$!]=$entry
  began[$!]=$(date +%s)
}

while IFS= read -r entry; do
  [[ -n "$entry" ]] || continue
  if [[ "$alone" == *" ${entry%% *} "* ]]; then
    later+=("$entry")
    continue
  fi
  while [[ ${#pids[@]} -ge $jobs ]]; do
    rc=0
    wait -n -p done_pid "${!pids[@]}" || rc=$?
    finish "$done_pid" "$rc"
  done
  run "$entry" "$@"
done <<< "$ordered"
while [[ ${#pids[@]} -gt 0 ]]; do
  rc=0
  wait -n -p done_pid "${!pids[@]}" || rc=$?
  finish "$done_pid" "$rc"
done
for entry in "${later[@]}"; do
  run "$entry" "$@"
  rc=0
  wait -n -p done_pid "${!pids[@]}" || rc=$?
  finish "$done_pid" "$rc"
done

mkdir -p "$(dirname "$times")"
cp "$logs/times" "$times"
echo "${#list[@]} test binaries, $jobs at a time, in $(($(date +%s) - start))s"
if [[ ${#failed[@]} -gt 0 ]]; then
  # Each failure's first panics again, short, last: a reader who sees only
  # the end of this output (CI's excerpt) still sees why each one failed.
  for name in "${failed[@]}"; do
    echo "== why $name failed =="
    awk '/panicked at/ { n++; left = 10 }
         /^stack backtrace:|^note: run with/ { left = 0 }
         left > 0 && n <= 3 { print substr($0, 1, 300); left-- }' \
      "$logs/${name//[:\/]/_}.log"
  done
  echo "failed: ${failed[*]} (logs in $logs)"
  exit 101
fi
rm -rf "$logs"
