//! Deliberate crashes at the moments crash safety is about, for tests
//! only: `BATCHGATE_FAULT=<moment>[:<n>]` makes the process exit (code
//! [`EXIT_CODE`], no cleanup: the Lease is not released, nothing in flight
//! finishes) the `n`-th time (default 1) the reconciler reaches `<moment>`:
//!
//! - `exit-after-admission-decision`: the engine has admitted a Workload,
//!   its admission is about to be written (it never is).
//! - `exit-after-admission-write`: the admission is on the Workload, its
//!   job has not been started.
//!
//! Unset (as shipped), each check is one atomic load. Documented in
//! docs/development.md.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    OnceLock,
};

pub const ENV: &str = "BATCHGATE_FAULT";
/// The exit status of a process that crashed on purpose.
pub const EXIT_CODE: i32 = 86;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    AdmissionDecided,
    AdmissionWritten,
}

impl Moment {
    fn name(self) -> &'static str {
        match self {
            Moment::AdmissionDecided => "exit-after-admission-decision",
            Moment::AdmissionWritten => "exit-after-admission-write",
        }
    }
}

/// `<moment>[:<n>]`, or why not.
pub fn parse(text: &str) -> Result<(Moment, usize), String> {
    let (name, n) = match text.split_once(':') {
        Some((name, n)) => (
            name,
            n.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("{ENV}={text:?}: the count after ':' must be a positive integer")
            })?,
        ),
        None => (text, 1),
    };
    [Moment::AdmissionDecided, Moment::AdmissionWritten]
        .into_iter()
        .find(|m| m.name() == name)
        .map(|m| (m, n))
        .ok_or_else(|| {
            format!("{ENV}={text:?}: unknown moment; use exit-after-admission-decision or exit-after-admission-write, optionally followed by :<n>")
        })
}

fn armed() -> Option<(Moment, usize)> {
    static ARMED: OnceLock<Option<(Moment, usize)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let text = std::env::var(ENV).ok().filter(|t| !t.is_empty())?;
        match parse(&text) {
            Ok(armed) => Some(armed),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    })
}

/// The reconciler reached `moment` for `workload` (namespace/name): exits
/// here if this is the armed moment's `n`-th time.
pub fn reached(moment: Moment, workload: &str) {
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    let Some((armed, n)) = armed() else {
        return;
    };
    if armed != moment || SEEN.fetch_add(1, Ordering::SeqCst) + 1 != n {
        return;
    }
    eprintln!(
        "{ENV}: {} #{n} for Workload {workload}; exiting now",
        moment.name()
    );
    std::process::exit(EXIT_CODE);
}

/// `BATCHGATE_STARVE=<seconds>`, for tests only: once this replica holds
/// the Lease, every worker of its async runtime spins for that long
/// without yielding, as a reconciler busy with CPU-bound work on a starved
/// node would. The Lease renewal runs on a thread of its own and must hold
/// through it. Unset (as shipped), nothing happens.
pub const STARVE_ENV: &str = "BATCHGATE_STARVE";

pub fn starve_if_asked() {
    let Some(seconds) = std::env::var(STARVE_ENV)
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|s| *s > 0)
    else {
        return;
    };
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    eprintln!("{STARVE_ENV}: all {workers} runtime workers spin for {seconds} s");
    let left = std::sync::Arc::new(AtomicUsize::new(workers));
    for _ in 0..workers {
        let left = left.clone();
        tokio::spawn(async move {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            if left.fetch_sub(1, Ordering::SeqCst) == 1 {
                eprintln!("{STARVE_ENV}: the runtime workers are free again");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_and_counts_parse_and_mistakes_are_named() {
        assert_eq!(
            parse("exit-after-admission-decision"),
            Ok((Moment::AdmissionDecided, 1))
        );
        assert_eq!(
            parse("exit-after-admission-write:7"),
            Ok((Moment::AdmissionWritten, 7))
        );
        assert!(parse("exit-after-admission-write:0")
            .unwrap_err()
            .contains("positive integer"));
        assert!(parse("exit-sometime")
            .unwrap_err()
            .contains("unknown moment"));
    }
}
