#!/usr/bin/env bash
# Builds batchgate's container image without a container engine, as an OCI
# image layout (what the Dockerfile describes: the static binary at
# /batchgate on an empty base, user 65532:65532, no shell, entrypoint
# /batchgate, command `serve --config /etc/batchgate/config.yaml`):
#
#   1. oci-image (tests/cluster/go/oci-image/main.go, on go-containerregistry)
#      and crane, from the Go module proxy, pinned by that module's go.sum,
#      cached in ${BATCHGATE_OCI_TOOLS_CACHE:-$HOME/.cache/batchgate/oci-image}/<version>/;
#   2. batchgate linked statically against glibc (x86_64-unknown-linux-gnu,
#      RUSTFLAGS=-C target-feature=+crt-static), in its own target directory
#      ${BATCHGATE_IMAGE_TARGET_DIR:-$HOME/.cache/batchgate/image/target}
#      (crt-static changes every crate's flags, so nothing is shared with target/);
#   3. checks that the binary has no program interpreter and runs with an
#      empty environment (`batchgate --version`);
#   4. strips its debug info (keeping symbols), writes the layout to <out>/oci
#      and an oci-archive of it to
#      <out>/batchgate-oci.tar (<out> = ${BATCHGATE_IMAGE_OUT:-target/image}).
#
# Usage: tests/cluster/build-image.sh [--profile release|dev]   (default release)
#   dev: an unoptimised binary, for the image test in `make test` (its cold
#   build is the dependency tree once, in debug); release: the image to ship.
# The last line on stdout is the layout directory. Push it with
#   "$(tests/cluster/build-image.sh --tools | tail -n1)/crane" push target/image/oci REGISTRY/batchgate:TAG
# (`--tools` only builds the tools and prints their directory.)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mod="$here/go/oci-image"
upstream=github.com/google/go-containerregistry

log() { printf 'build-image.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

profile=release tools_only=
while [[ $# -gt 0 ]]; do
	case "$1" in
	--profile) profile="${2:-}"; shift 2 ;;
	--tools) tools_only=1; shift ;;
	*) die "unknown argument '$1' (usage: build-image.sh [--profile release|dev] [--tools])" ;;
	esac
done
[[ "$profile" == release || "$profile" == dev ]] || die "--profile must be release or dev, not '$profile'"

# ---- 1. the tools ------------------------------------------------------------
ver="$(awk -v m="$upstream" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$mod/go.mod")"
[[ -n "$ver" ]] || die "no $upstream requirement in $mod/go.mod"
tools="${BATCHGATE_OCI_TOOLS_CACHE:-${HOME:?HOME is not set}/.cache/batchgate/oci-image}/$ver"
stamp_want="$(cat "$mod"/go.{mod,sum} "$mod"/main.go "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
tools_fresh() {
	[[ -x "$tools/oci-image" && -x "$tools/crane" && "$(cat "$tools/.stamp" 2>/dev/null)" == "$stamp_want" ]]
}
if ! tools_fresh; then
	go="${GO:-}"
	if [[ -z "$go" ]]; then
		if command -v go >/dev/null 2>&1; then go="$(command -v go)"
		elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
		fi
	fi
	[[ -n "$go" && -x "$go" ]] || die "Go is required to build the image tools and was not found (install Go >= 1.26, or set GO=/path/to/go); the first build needs the Go module proxy"
	command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required"
	mkdir -p "$tools"
	exec 9>"$tools/.lock"
	flock 9
	if ! tools_fresh; then
		t=$SECONDS
		log "building oci-image and crane ($upstream@$ver)"
		rm -f "$tools/.stamp"
		(cd "$mod" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly" "$go" build -trimpath -ldflags "-s -w" -o "$tools/oci-image" .)
		(cd "$mod" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly" "$go" build -trimpath -ldflags "-s -w" -o "$tools/crane" "$upstream/cmd/crane")
		printf '%s\n' "$stamp_want" >"$tools/.stamp"
		log "  tools built in $((SECONDS - t))s"
	fi
	exec 9>&-
fi
if [[ -n "$tools_only" ]]; then
	printf '%s\n' "$tools"
	exit 0
fi

# ---- 2. the static binary ------------------------------------------------------
libc_a="$(gcc -print-file-name=libc.a 2>/dev/null || true)"
[[ -f "$libc_a" ]] || die "glibc's static libraries (libc.a) are missing: install libc6-dev"
target=x86_64-unknown-linux-gnu
target_dir="${BATCHGATE_IMAGE_TARGET_DIR:-$HOME/.cache/batchgate/image/target}"
t=$SECONDS
log "building batchgate ($profile, $target, +crt-static) in $target_dir"
# The same environment whoever runs this (a shell, make, or tests/image.rs
# under cargo test, whose CARGO_*, PATH and other variables differ), so that
# cargo finds the build fresh instead of rebuilding the tree.
# rustup's proxies first when there are (cargo test puts the toolchain's own
# directory first on PATH).
cargo_dir="$HOME/.cargo/bin"
[[ -x "$cargo_dir/cargo" ]] || cargo_dir="$(dirname "$(command -v cargo)")" || die "cargo is required"
clean_env=(env -i "HOME=$HOME" "PATH=$cargo_dir:/usr/local/bin:/usr/bin:/bin"
	"CARGO_TARGET_DIR=$target_dir" CARGO_INCREMENTAL=0
	"RUSTFLAGS=${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static")
# --target keeps build scripts and proc macros dynamic; only the binary is static.
# No default features: the image has no `batchgate dev` (the local
# control-plane launcher), as the Dockerfile builds it.
(cd "$repo" && "${clean_env[@]}" cargo build --locked --no-default-features --profile "$profile" --target "$target" --bin batchgate)
dir="$profile"; [[ "$profile" == dev ]] && dir=debug
bin="$target_dir/$target/$dir/batchgate"
log "  batchgate built in $((SECONDS - t))s"

# ---- 3. static, and runs -------------------------------------------------------
if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
	die "$bin is dynamically linked (it names a program interpreter)"
fi
if readelf -d "$bin" 2>/dev/null | grep -q '(NEEDED)'; then
	die "$bin needs shared libraries: $(readelf -d "$bin" | grep '(NEEDED)' | tr -s ' ')"
fi
version="$(cd / && env -i "$bin" --version)" || die "$bin --version failed"
log "  $version: statically linked, $(stat -c %s "$bin") bytes"
command -v strip >/dev/null 2>&1 || die "strip (binutils) is required"

# ---- 4. the image ----------------------------------------------------------------
out="${BATCHGATE_IMAGE_OUT:-$repo/target/image}"
mkdir -p "$out"
# The commit's time when there is one, so the same commit gives the same image.
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}"
# Debug info is not shipped (symbols stay, for backtraces).
strip --strip-debug -o "$out/batchgate" "$bin"
read -r digest layer_size < <("$tools/oci-image" --binary "$out/batchgate" --out "$out/oci.tmp" \
	--ref "batchgate:${version##* }" --version "${version##* }" --epoch "$epoch")
rm -rf "$out/oci"
mv "$out/oci.tmp" "$out/oci"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
	-C "$out/oci" -cf "$out/batchgate-oci.tar.tmp" .
mv -f "$out/batchgate-oci.tar.tmp" "$out/batchgate-oci.tar"
log "image $digest: layer $layer_size bytes (gzip), layout $(du -sb "$out/oci" | cut -f1) bytes, in $out/oci and $out/batchgate-oci.tar"
printf '%s\n' "$out/oci"
