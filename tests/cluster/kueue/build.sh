#!/usr/bin/env bash
# Builds Kueue's scheduler benchmark and kueuectl from Kueue's Go module:
#   runner        test/performance/scheduler/runner        (load generator + recorder)
#   minimalkueue  test/performance/scheduler/minimalkueue  (Kueue's scheduler, no webhooks)
#   checker       go test -c test/performance/scheduler/checker  (-> checker.test)
#   kueuectl      cmd/kueuectl                             (-> kubectl-kueue)
#   manager       cmd/kueue                                (-> kueue-manager: the whole
#                 controller manager, a stock MultiKueue worker for interop)
#
# Usage: tests/cluster/kueue/build.sh [runner] [minimalkueue] [checker] [kueuectl] [manager]
#   (no arguments: the first four). Each binary is built only if missing or stale.
#
# Output: ${BATCHGATE_KUEUE_CACHE:-$HOME/.cache/batchgate/kueue}/<version>/
#           {runner,minimalkueue,checker.test,kubectl-kueue}
#           src/   the module source (configs, CRDs; the runner's PROJECT_DIR)
# The last line on stdout is that directory:
#   KUEUE=$(tests/cluster/kueue/build.sh runner minimalkueue | tail -n1)
#
# The module's hash is pinned by the go.sum next to this script; the checksum
# database has no entry for it, so it is fetched with GONOSUMDB for it alone.
# Cold build times on 2 cores: runner ~30 s, minimalkueue ~35 s, checker ~4 min,
# kueuectl ~1 min, manager ~11 min. Concurrent runs are serialised with flock(1).
#
# Environment:
#   BATCHGATE_KUEUE_CACHE  cache root (default $HOME/.cache/batchgate/kueue)
#   GO                     go binary to use (default: `go` on PATH, then /usr/local/go/bin/go)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod=sigs.k8s.io/kueue

log() { printf 'kueue/build.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

ver="$(awk -v m="$mod" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$here/go.mod")"
[[ -n "$ver" ]] || die "could not read the $mod version from $here/go.mod"

all=(runner minimalkueue checker kueuectl manager)
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(runner minimalkueue checker kueuectl)

# name -> output file and build command (run inside the source copy).
outfile() {
	case "$1" in
	runner | minimalkueue) printf '%s' "$1" ;;
	checker) printf 'checker.test' ;;
	kueuectl) printf 'kubectl-kueue' ;;
	manager) printf 'kueue-manager' ;;
	*) die "unknown binary '$1'; choose from: ${all[*]}" ;;
	esac
}
for b in "${want[@]}"; do outfile "$b" >/dev/null; done

cache_root="${BATCHGATE_KUEUE_CACHE:-${HOME:?HOME is not set}/.cache/batchgate/kueue}"
out="$cache_root/$ver"
src="$out/src"

# The stamp records the exact inputs; a change to go.mod/go.sum or this script rebuilds.
stamp_want="$(cat "$here"/go.{mod,sum} "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
fresh() { # <name>
	[[ -x "$out/$(outfile "$1")" && -f "$src/Makefile" ]] &&
		[[ "$(cat "$out/.stamp.$1" 2>/dev/null)" == "$stamp_want" ]]
}
complete() {
	local b
	for b in "${want[@]}"; do fresh "$b" || return 1; done
}

if complete; then
	printf '%s\n' "$out"
	exit 0
fi

# ---- locate Go -------------------------------------------------------------
go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"
	elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
	fi
fi
if [[ -z "$go" || ! -x "$go" ]]; then
	die "Go is required to build Kueue's benchmark and was not found.
  Install Go >= 1.25 (https://go.dev/dl/, unpack to /usr/local/go) and put
  /usr/local/go/bin on PATH, or point GO=/path/to/go at a Go binary.
  The build needs access to the Go module proxy (GOPROXY) on first run."
fi

command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required"
mkdir -p "$out"
exec 9>"$out/.lock"
if ! flock -n 9; then
	log "another kueue/build.sh holds $out/.lock; waiting for it"
	flock 9
fi
if complete; then # someone else built it while we waited
	printf '%s\n' "$out"
	exit 0
fi

start=$SECONDS
export CGO_ENABLED=0

# ---- module source -----------------------------------------------------------
# Downloaded against the pinned go.sum (a hash mismatch is a SECURITY ERROR and
# stops here), then copied out of the read-only module cache.
if [[ ! -f "$src/Makefile" || "$(cat "$out/.stamp.src" 2>/dev/null)" != "$stamp_want" ]]; then
	log "fetching $mod@$ver"
	info="$(cd "$here" && GONOSUMDB="$mod${GONOSUMDB:+,$GONOSUMDB}" GOFLAGS=-mod=readonly \
		"$go" mod download -json "$mod@$ver")" || die "go mod download $mod@$ver failed:
$info"
	dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info" | head -n1)"
	commit="$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",*$/\1/p' <<<"$info" | head -n1)"
	[[ -n "$dir" && -f "$dir/go.mod" ]] || die "no module directory in: $info"
	rm -rf "$src" "$out/.src.$$"
	cp -r "$dir" "$out/.src.$$"
	chmod -R u+w "$out/.src.$$"
	printf '%s\n' "${commit:-unknown}" >"$out/.src.$$/.commit"
	mv "$out/.src.$$" "$src"
	printf '%s\n' "$stamp_want" >"$out/.stamp.src"
fi
commit="$(cat "$src/.commit")"

vpkg="$mod/pkg/version"
ldflags="-s -w -X '$vpkg.GitVersion=$ver' -X '$vpkg.GitCommit=$commit'"
ldflags+=" -X '$vpkg.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)'"

for b in "${want[@]}"; do
	fresh "$b" && continue
	f="$(outfile "$b")"
	t=$SECONDS
	log "building $b ($mod@$ver)"
	rm -f "$out/.stamp.$b"
	case "$b" in
	runner | minimalkueue)
		(cd "$src" && "$go" build -mod=readonly -trimpath -ldflags "$ldflags" \
			-o "$out/.$f.tmp" "./test/performance/scheduler/$b") ;;
	checker)
		(cd "$src" && "$go" test -mod=readonly -c -trimpath \
			-o "$out/.$f.tmp" ./test/performance/scheduler/checker) ;;
	kueuectl)
		(cd "$src" && "$go" build -mod=readonly -trimpath -ldflags "$ldflags" \
			-o "$out/.$f.tmp" ./cmd/kueuectl) ;;
	manager)
		(cd "$src" && "$go" build -mod=readonly -trimpath -ldflags "$ldflags" \
			-o "$out/.$f.tmp" ./cmd/kueue) ;;
	esac
	mv -f "$out/.$f.tmp" "$out/$f"
	printf '%s\n' "$stamp_want" >"$out/.stamp.$b"
	log "  $b built in $((SECONDS - t))s"
done

log "done in $((SECONDS - start))s: $out"
printf '%s\n' "$out"
