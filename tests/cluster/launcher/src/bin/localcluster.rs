//! `localcluster`: start a local control plane for hands-on work.
//!
//! ```text
//! cargo run -p batchgate-localcluster --bin localcluster [-- --nodes N] [--cert-manager]
//! ```
//! Prints `export KUBECONFIG=...` (and the server URL, log dir) on stdout,
//! then waits for Ctrl-C / SIGTERM / SIGHUP and tears everything down.

use std::process::ExitCode;

use batchgate_localcluster::{default_nodes, ClusterOptions, LocalCluster, NodeSpec};

const USAGE: &str =
    "usage: localcluster [--nodes N] [--cert-manager]   (default: the 4 default nodes, no cert-manager)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut nodes = default_nodes();
    let mut cert_manager = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--nodes" => match args.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => {
                    nodes = (0..n)
                        .map(|i| NodeSpec::new(format!("kwok-node-{i}")))
                        .collect()
                }
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--cert-manager" => cert_manager = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprintln!("unknown argument {arg:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }

    // Block the shutdown signals in this (and every later) thread so that
    // sigwait below receives them; children get a clean mask from std.
    let signals = match shutdown_signals() {
        Ok(set) => set,
        Err(e) => {
            eprintln!("localcluster: blocking signals: {e}");
            return ExitCode::FAILURE;
        }
    };

    let mut cluster = match LocalCluster::start(ClusterOptions {
        nodes,
        cert_manager,
        ..ClusterOptions::default()
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("localcluster: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (phase, at) in cluster.timings() {
        eprintln!("localcluster: {phase:<15} {:>6.2}s", at.as_secs_f64());
    }
    println!("export KUBECONFIG={}", cluster.kubeconfig().display());
    println!("export PATH={}:$PATH", cluster.bin_dir().display());
    println!("# server {}", cluster.server_url());
    println!("# logs   {}", cluster.dir().join("logs").display());
    let pids: Vec<String> = cluster
        .pids()
        .iter()
        .map(|(name, pid)| format!("{name}={pid}"))
        .collect();
    println!("# pids   {}", pids.join(" "));
    println!("# Ctrl-C to stop");

    let mut sig: libc::c_int = 0;
    // SAFETY: `signals` is an initialised sigset; sigwait writes one int.
    unsafe {
        libc::sigwait(&signals, &mut sig);
    }
    eprintln!("localcluster: signal {sig}, stopping");
    cluster.stop();
    ExitCode::SUCCESS
}

fn shutdown_signals() -> std::io::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(set)
    }
}
