// Pins Kueue's Go module for tests/cluster/kueue/build.sh. Nothing imports it:
// build.sh downloads the module with this go.sum as the trusted hash (the
// checksum database has no entry for v0.17.1) and builds inside a copy of it.
module batchgate.local/cluster/kueue

go 1.25.0

require sigs.k8s.io/kueue v0.17.1
