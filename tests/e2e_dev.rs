//! `make dev`'s demo path, non-interactively: runs the real `batchgate dev`
//! (one local control plane), reads the tour it prints, runs each step's
//! commands as printed in `bash` (with the printed `cd … && export …` line)
//! and checks that what each step says happens does: the Job is created
//! suspended, its Workload admitted, its pods run on KWOK nodes, a queue
//! change is refused with Kueue's words, the Job completes and its Workload
//! finishes, and of two big Jobs one waits for quota with its reason. On
//! the same cluster every file under `examples/` applies. Then Ctrl-C (SIGINT): batchgate dev exits 0, and its stderr from start to
//! finish holds only its own three progress lines (no warnings, no errors).

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");
/// Generous: the machine is shared; every wait ends on an event.
const DEADLINE: Duration = Duration::from_secs(120);

struct Dev(Child);

impl Drop for Dev {
    fn drop(&mut self) {
        // A failed assertion: stop it (its cluster follows through PDEATHSIG).
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[derive(Debug, Default)]
struct Step {
    title: String,
    commands: Vec<String>,
    expected: Vec<String>,
}

/// The tour as printed: the `cd … && export …` line and the numbered steps.
fn parse_tour(text: &str) -> (String, Vec<Step>) {
    let mut setup = None;
    let mut steps: Vec<Step> = Vec::new();
    for line in text.lines() {
        if line.starts_with("cd ") {
            setup = Some(line.to_string());
        } else if let Some(title) = line.strip_prefix("# ").filter(|t| {
            t.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        }) {
            steps.push(Step {
                title: title.to_string(),
                ..Step::default()
            });
        } else if let Some(step) = steps.last_mut() {
            if let Some(out) = line.strip_prefix("#    ") {
                step.expected.push(out.to_string());
            } else if !line.is_empty() && !line.starts_with("Ctrl-C") {
                step.commands.push(line.to_string());
            }
        }
    }
    (setup.expect("the tour's `cd … && export …` line"), steps)
}

/// Runs `command` after `setup` in bash: (success, stdout, stderr).
fn sh(setup: &str, command: &str) -> (bool, String, String) {
    let out = Command::new("bash")
        .args(["-c", &format!("{setup} && {command}")])
        .output()
        .expect("running bash");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Re-runs `command` until `ok` accepts its stdout.
fn until(setup: &str, command: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < DEADLINE {
        let (_, out, err) = sh(setup, command);
        if ok(&out) {
            return out;
        }
        last = format!("{out}{err}");
        thread::sleep(Duration::from_millis(500));
    }
    panic!("{what}: not seen within {DEADLINE:?}; `{command}` last printed:\n{last}");
}

/// Rows of a kubectl table whose first column starts with `prefix`, split
/// on runs of spaces.
fn rows<'a>(table: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    table
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.split_whitespace().collect())
        .collect()
}

/// Every file under `examples/`, applied to the tour's cluster (CRDs and
/// webhooks installed): objects that only need to exist (drivers, classes,
/// queues) for real, dependencies first; workloads (Jobs, Pods) with
/// `--dry-run=server`, which still runs every admission webhook. An
/// AdmissionReview (a request body for curl) applies its `request.object`.
fn every_example_applies(setup: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(root).join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("reading examples/") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    // What others refer to goes first: a DeviceClass names its DeviceDriver.
    let rank = |text: &str| {
        [
            "kind: DeviceDriver",
            "kind: DeviceClass",
            "kind: ResourceFlavor",
        ]
        .iter()
        .position(|k| text.contains(k))
        .unwrap_or(3)
    };
    let mut docs: Vec<(usize, String, String)> = files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("reading an example");
            let name = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            (rank(&text), name, text)
        })
        .collect();
    docs.sort();
    assert!(
        docs.len() >= 7,
        "{:?}",
        docs.iter().map(|d| &d.1).collect::<Vec<_>>()
    );
    let mut failures = Vec::new();
    for (_, name, text) in &docs {
        let manifest = match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("yaml" | "yml") => text.clone(),
            Some("json") => {
                let v: serde_json::Value = serde_json::from_str(text).expect("JSON");
                if v["kind"] == "AdmissionReview" {
                    v["request"]["object"].to_string()
                } else {
                    text.clone()
                }
            }
            _ => panic!("{name}: an example that is neither YAML nor JSON"),
        };
        let workload = [
            "kind: Job",
            "kind: Pod",
            "\"kind\":\"Job\"",
            "\"kind\":\"Pod\"",
        ]
        .iter()
        .any(|k| manifest.contains(k));
        let ns = serde_json::from_str::<serde_json::Value>(&manifest)
            .ok()
            .and_then(|v| v["metadata"]["namespace"].as_str().map(str::to_string));
        if let Some(ns) = ns {
            let _ = sh(setup, &format!("kubectl create namespace {ns}"));
        }
        let dry = if workload { " --dry-run=server" } else { "" };
        let (ok, out, err) = sh(
            setup,
            &format!("kubectl apply{dry} -f - <<'EXAMPLE'\n{manifest}\nEXAMPLE"),
        );
        if !ok {
            failures.push(format!("{name}:\n{out}{err}"));
        }
    }
    assert!(
        failures.is_empty(),
        "examples that do not apply:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_tour_works_as_printed_and_every_example_applies() {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .arg("dev")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting batchgate dev");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let mut dev = Dev(child);
    let err_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut tour = String::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let done = line.starts_with("Ctrl-C stops");
            tour.push_str(&line);
            tour.push('\n');
            if done {
                let _ = tx.send(tour.clone());
            }
        }
    });
    let tour = match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(t) => t,
        Err(e) => {
            // What batchgate dev said before it stopped (or was stopped).
            drop(dev);
            let stderr = err_reader.join().unwrap_or_default();
            panic!("batchgate dev printed no tour within 5 min ({e}); its stderr:\n{stderr}");
        }
    };
    let up = started.elapsed();
    let (setup, steps) = parse_tour(&tour);
    let titles: Vec<&str> = steps.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(steps.len(), 5, "{titles:?}\n{tour}");

    // 1. Created suspended: the printed output, exactly.
    let s = &steps[0];
    assert_eq!(s.commands.len(), 1, "{s:?}");
    let (ok, out, err) = sh(&setup, &s.commands[0]);
    assert!(ok, "{s:?}: {err}");
    assert_eq!(out.trim_end(), s.expected[0], "{s:?}");
    assert_eq!(out.trim_end(), "sample-job: suspend=true");

    // 2. Its Workload admitted to cluster-queue, its pods on KWOK nodes.
    let s = &steps[1];
    assert_eq!(s.commands.len(), 2, "{s:?}");
    until(
        &setup,
        &s.commands[0],
        "sample-job's Workload admitted",
        |t| {
            rows(t, "job-sample-job-")
                .iter()
                .any(|r| r[1] == "user-queue" && r[2] == "cluster-queue" && r[3] == "True")
        },
    );
    until(
        &setup,
        &s.commands[1],
        "sample-job's 3 pods on KWOK nodes",
        |t| {
            let pods = rows(t, "sample-job-");
            pods.len() == 3 && pods.iter().all(|r| r[6].starts_with("kwok-"))
        },
    );

    // 3. The queue change refused, in the printed words.
    let s = &steps[2];
    let (ok, _, err) = sh(&setup, &s.commands[0]);
    assert!(!ok, "{s:?}: the label change was accepted");
    assert_eq!(err.trim_end(), s.expected[0], "{s:?}");
    assert!(err.contains(r#"Invalid value: "other-queue": field is immutable"#));

    // 4. Complete, and its Workload Finished.
    let s = &steps[3];
    let (ok, out, err) = sh(&setup, &s.commands[0]);
    assert!(ok, "{s:?}: {err}");
    assert_eq!(out.trim_end(), s.expected[0], "{s:?}");
    until(
        &setup,
        "kubectl get workloads",
        "sample-job's Workload finished",
        |t| {
            rows(t, "job-sample-job-")
                .iter()
                .any(|r| r.len() > 4 && r[4] == "True")
        },
    );

    // 5. One big Job admitted, the other pending, with its reason.
    let s = &steps[4];
    assert_eq!(s.commands.len(), 3, "{s:?}");
    let (ok, _, err) = sh(&setup, &s.commands[0]);
    assert!(ok, "{s:?}: {err}");
    until(
        &setup,
        &s.commands[1],
        "one big Job ADMITTED, one PENDING (kubectl kueue list workload)",
        |t| {
            let big = rows(t, "job-big-job-");
            let status = |want: &str| big.iter().filter(|r| r.contains(&want)).count();
            big.len() == 2 && status("ADMITTED") == 1 && status("PENDING") == 1
        },
    );
    // Its position, from Kueue's visibility API served by batchgate.
    until(
        &setup,
        &s.commands[1],
        "the pending big Job at position 0",
        |t| {
            rows(t, "job-big-job-").iter().any(|r| {
                r.iter()
                    .position(|c| *c == "PENDING")
                    .is_some_and(|i| r.get(i + 1) == Some(&"0"))
            })
        },
    );
    let (_, reason) = s.expected[0]
        .split_once("   ")
        .expect("a name and a reason");
    until(
        &setup,
        &s.commands[2],
        "the pending big Job's reason",
        |t| {
            t.lines()
                .filter(|l| l.starts_with("job-big-job-"))
                .any(|l| l.trim_end().ends_with(reason.trim()))
        },
    );
    let toured = started.elapsed();

    every_example_applies(&setup);

    // Ctrl-C: exits 0, and nothing but its own progress lines on stderr.
    // SAFETY: kill(2) on the child's pid; no memory is touched.
    assert_eq!(
        unsafe { libc::kill(dev.0.id() as i32, libc::SIGINT) },
        0,
        "signalling batchgate dev"
    );
    let stop = Instant::now();
    let status = loop {
        if let Some(status) = dev.0.try_wait().expect("waiting for batchgate dev") {
            break status;
        }
        assert!(
            stop.elapsed() < DEADLINE,
            "batchgate dev did not exit after SIGINT"
        );
        thread::sleep(Duration::from_millis(100));
    };
    let stderr = err_reader.join().expect("stderr reader");
    assert!(status.success(), "{status}\n{stderr}");
    let noise: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("batchgate dev: "))
        .collect();
    assert!(noise.is_empty(), "unexpected stderr lines:\n{stderr}");
    assert_eq!(stderr.lines().count(), 3, "{stderr}");
    eprintln!(
        "tour printed after {:.1} s, toured by {:.1} s, stopped in {:.1} s",
        up.as_secs_f64(),
        toured.as_secs_f64(),
        stop.elapsed().as_secs_f64()
    );
}
