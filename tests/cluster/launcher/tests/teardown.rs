//! The cluster must go away even when its owner is killed without warning:
//! PDEATHSIG kills the components, the watchdog removes the temp dir.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigkill_of_the_owner_tears_the_cluster_down() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_localcluster"))
        .args(["--nodes", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("localcluster starts");
    let stdout = child.stdout.take().unwrap();
    let mut kubeconfig = None;
    let mut pids: Vec<(String, u32)> = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
            kubeconfig = Some(PathBuf::from(path));
        }
        if let Some(list) = line.strip_prefix("# pids") {
            pids = list
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
                .collect();
        }
        if line.starts_with("# Ctrl-C") {
            break;
        }
    }
    let kubeconfig = kubeconfig.expect("localcluster printed KUBECONFIG");
    let dir = kubeconfig.parent().unwrap().to_path_buf();
    assert_eq!(pids.len(), 5, "{pids:?}");
    assert!(dir.exists());
    for (name, pid) in &pids {
        assert!(alive(*pid), "{name} is not running");
    }

    child.kill().unwrap(); // SIGKILL: no destructor, no signal handler runs
    child.wait().unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let running: Vec<_> = pids.iter().filter(|(_, p)| alive(*p)).collect();
        if running.is_empty() && !dir.exists() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after SIGKILL still running: {running:?}, dir exists: {}",
            dir.exists()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}
