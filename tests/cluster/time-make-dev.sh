#!/usr/bin/env bash
# Times `make dev` the way README reports it: a fresh clone of this checkout
# (cold cargo target) with an empty control-plane cache (Go's module and
# build caches as they are), until the tour is printed; then again warm.
# Usage: tests/cluster/time-make-dev.sh [work-dir]   (default /tmp/batchgate-time-dev)
set -u
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-/tmp/batchgate-time-dev}"
rm -rf "$work" && mkdir -p "$work"
git clone -q "$src" "$work/clone" && cd "$work/clone" || exit 1
export BATCHGATE_CLUSTER_CACHE="$work/cluster-cache"

# Runs `make dev` until it prints the tour; prints the seconds it took.
to_tour() {
	local log=$1 t0 pid
	t0=$(date +%s.%N)
	setsid make dev >"$log" 2>&1 &
	pid=$!
	until grep -q "batchgate dev: ready after" "$log"; do
		kill -0 "$pid" 2>/dev/null || { echo "make dev exited early (see $log)" >&2; exit 1; }
		sleep 0.2
	done
	echo "$(date +%s.%N) - $t0" | bc
	kill -INT -- "-$pid" 2>/dev/null
	wait "$pid"
}

echo "load before: $(cat /proc/loadavg)"
echo "cold: $(to_tour "$work/cold.log") s to the tour"
echo "load after: $(cat /proc/loadavg)"
grep "make dev:" "$work/cold.log"
echo "warm: $(to_tour "$work/warm.log") s to the tour"
