#!/usr/bin/env bash
# Builds cert-manager's controller and CA injector once, from the cert-manager
# Go module (github.com/cert-manager/cert-manager, the version pinned by the
# wrapper module tests/cluster/go/cert-manager), and copies its CRDs out of the
# module source, for the cert-manager e2e (tests/e2e_cert_rotation.rs) and the
# launcher's optional cert-manager component.
#
# cert-manager's command packages (cmd/controller, cmd/cainjector,
# cmd/webhook) are separate Go modules that the module proxy does not serve,
# so the wrapper module has two small mains of its own that wire the
# library's controllers. cert-manager's webhook is not built: the CRDs'
# OpenAPI schemas validate Certificates and Issuers, and the controller does
# not depend on the webhook.
#
# Output: ${BATCHGATE_CERT_MANAGER_CACHE:-$HOME/.cache/batchgate/cert-manager}/<version>/
#           cert-manager-controller  cert-manager-cainjector  crds/*.yaml
# The last line on stdout is that directory:
#   CM=$(tests/cluster/build-cert-manager.sh | tail -n1)
# With the cache warm this only checks the stamp and exits. Go's module and
# build caches are shared with the other build scripts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/go/cert-manager"
upstream=github.com/cert-manager/cert-manager

log() { printf 'build-cert-manager.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

ver="$(awk -v m="$upstream" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$mod/go.mod")"
[[ -n "$ver" ]] || die "no $upstream requirement in $mod/go.mod"

cache_root="${BATCHGATE_CERT_MANAGER_CACHE:-${HOME:?HOME is not set}/.cache/batchgate/cert-manager}"
out="$cache_root/$ver"
stamp_want="$(cat "$mod"/go.{mod,sum} "$mod"/*/main.go "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

complete() {
	[[ -x "$out/cert-manager-controller" && -x "$out/cert-manager-cainjector" ]] &&
		[[ -f "$out/crds/cert-manager.io_certificates.yaml" ]] &&
		[[ "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp_want" ]]
}
if complete; then
	printf '%s\n' "$out"
	exit 0
fi

go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"
	elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
	fi
fi
[[ -n "$go" && -x "$go" ]] || die "Go is required to build cert-manager and was not found (install Go >= 1.26, or set GO=/path/to/go); the first build needs the Go module proxy"
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required"

mkdir -p "$out"
exec 9>"$out/.lock"
if ! flock -n 9; then
	log "another build-cert-manager.sh holds $out/.lock; waiting for it"
	flock 9
fi
if complete; then
	printf '%s\n' "$out"
	exit 0
fi

start=$SECONDS
rm -f "$out/.stamp"
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"

# The module source, checked against go.sum (a mismatch stops here): its CRDs.
info="$(cd "$mod" && "$go" mod download -json "$upstream")" || die "go mod download $upstream@$ver failed:
$info"
dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info" | head -n1)"
[[ -n "$dir" && -d "$dir/deploy/crds" ]] || die "no deploy/crds in the module source: $info"
rm -rf "$out/crds" "$out/.crds.$$"
mkdir -p "$out/.crds.$$"
cp "$dir"/deploy/crds/*.yaml "$out/.crds.$$/"
chmod -R u+w "$out/.crds.$$"
mv "$out/.crds.$$" "$out/crds"

for b in controller cainjector; do
	t=$SECONDS
	log "building cert-manager-$b ($upstream@$ver)"
	(cd "$mod" && "$go" build -trimpath -ldflags "-s -w" -o "$out/.cert-manager-$b.tmp" "./$b")
	mv -f "$out/.cert-manager-$b.tmp" "$out/cert-manager-$b"
	log "  cert-manager-$b built in $((SECONDS - t))s"
done
printf '%s\n' "$stamp_want" >"$out/.stamp.tmp"
mv -f "$out/.stamp.tmp" "$out/.stamp"
log "built in $((SECONDS - start))s into $out"
printf '%s\n' "$out"
