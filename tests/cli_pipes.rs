//! Both binaries end quietly when their reader stops reading: `| head`
//! closes the pipe after one line, and the command exits 0 with nothing on
//! stderr (before, `kubectl-kueue completion bash | head` panicked with a
//! backtrace and exit 101).

use std::process::Command;

const KUBECTL_KUEUE: &str = env!("CARGO_BIN_EXE_kubectl-kueue");
const BATCHGATE: &str = env!("CARGO_BIN_EXE_batchgate");

/// Runs `<bin> <args> | head -1` under `pipefail`, so the pipeline's status
/// is the binary's own; returns (status, first line, stderr).
fn into_head(bin: &str, args: &str) -> (i32, String, String) {
    let out = Command::new("bash")
        .args(["-o", "pipefail", "-c", &format!("'{bin}' {args} | head -1")])
        .output()
        .expect("running bash");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_whose_reader_stops_end_quietly() {
    for (bin, args) in [
        (KUBECTL_KUEUE, "completion bash"),
        (KUBECTL_KUEUE, "completion zsh"),
        (BATCHGATE, "crds"),
        (BATCHGATE, "webhooks"),
    ] {
        let (status, first, stderr) = into_head(bin, args);
        // The premise: the output is longer than what head reads, so the
        // pipe really closed under the writer.
        let whole = Command::new(bin)
            .args(args.split(' '))
            .output()
            .expect("running the binary");
        assert!(
            whole.stdout.len() > 256 * 1024
                || whole.stdout.iter().filter(|b| **b == b'\n').count() > 1000,
            "{args}: too short to fill the pipe ({} bytes)",
            whole.stdout.len()
        );
        assert_eq!(status, 0, "{args} | head -1 exited {status}: {stderr}");
        assert!(stderr.is_empty(), "{args} | head -1 printed: {stderr}");
        assert!(!first.is_empty(), "{args} printed nothing");
    }
}
