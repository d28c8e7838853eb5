//! `kubectl-kueue`: the kubectl plugin (`kubectl kueue ...`); also runs as
//! `kueuectl` when installed under that name. See `batchgate::kueuectl`.

fn main() {
    std::process::exit(batchgate::kueuectl::main_with_args(
        std::env::args_os().collect(),
    ));
}
