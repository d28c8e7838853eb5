#!/usr/bin/env bash
# `make dev`: build what is missing, saying what and roughly how long first,
# then run `batchgate dev` (local control plane + batchgate + Kueue's quick
# start + a tour). Arguments go to `batchgate dev` (e.g. --no-demo).
#
# batchgate is built with plain `cargo build --release`: the same command a
# user runs, so one build serves both (no dev-dependencies, one feature set).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
say() { printf 'make dev: %s\n' "$*" >&2; }

cache="${BATCHGATE_CLUSTER_CACHE:-$HOME/.cache/batchgate/cluster}"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

if [[ -n "${BATCHGATE_CLUSTER_BIN:-}" ]] || compgen -G "$cache/*/bin/kube-apiserver" >/dev/null; then
	cluster_plan="the local control plane: already built (checked in milliseconds)"
	cluster_built=1
else
	cluster_plan="the local control plane (Kubernetes, etcd, KWOK) from Go modules: ~8 min on 2 idle cores, once"
	cluster_built=0
fi
if [[ -x "$target/release/batchgate" ]]; then
	cargo_plan="batchgate (cargo build --release): only what changed since the last build, seconds to a few minutes"
else
	cargo_plan="batchgate (cargo build --release): its first release build (~235 crates; about 23 min on 2 cores), once"
fi
say "about to build"
say "  1. $cluster_plan"
say "  2. $cargo_plan"

# 1. The control plane. build.sh logs each stage; add a heartbeat, since the
#    Kubernetes stage compiles for minutes without a word.
start=$SECONDS
if [[ -n "${BATCHGATE_CLUSTER_BIN:-}" ]]; then
	:
elif [[ $cluster_built == 1 ]]; then
	tests/cluster/build.sh >/dev/null
else
	tests/cluster/build.sh >/dev/null &
	build=$!
	while kill -0 "$build" 2>/dev/null; do
		sleep 1
		if (((SECONDS - start) % 30 == 0)) && kill -0 "$build" 2>/dev/null; then
			say "  ... still building the control plane ($(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s so far)"
		fi
	done
	wait "$build" || { say "building the local control plane failed (see above)"; exit 1; }
	say "  control plane built in $((SECONDS - start)) s"
fi

# 2. batchgate (and kubectl-kueue, which the tour uses).
start=$SECONDS
cargo build --release
say "  batchgate built in $((SECONDS - start)) s"

exec "$target/release/batchgate" dev "$@"
