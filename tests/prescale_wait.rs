//! `batchgate prescale-wait` as a process (the init container of a
//! PreScaledCronJob's pods): it exits 0 within a second of a target a few
//! seconds ahead, at once when the run has passed, on SIGTERM, and, from a
//! schedule and primer schedule, at the real run that follows the primer
//! minute it started in.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const BIN: &str = env!("CARGO_BIN_EXE_batchgate");

fn now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

fn rfc3339(unix: u64) -> String {
    chrono::DateTime::from_timestamp(unix as i64, 0)
        .unwrap()
        .to_rfc3339()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("prescale-wait")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the exit (at most `within`); the exit status and the wall
/// time of the exit.
fn finish(mut child: Child, within: Duration) -> (std::process::ExitStatus, Duration, String) {
    let deadline = Instant::now() + within;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let at = now();
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return (st, at, text);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("prescale-wait did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn exits_within_a_second_of_a_target_a_few_seconds_ahead() {
    let target = now().as_secs() + 4;
    let child = spawn(&["--until", &rfc3339(target)]);
    let (st, at, out) = finish(child, Duration::from_secs(30));
    assert!(st.success(), "{out}");
    let late = at.as_secs_f64() - target as f64;
    eprintln!("exited {late:+.3} s from the target");
    assert!(
        (0.0..1.0).contains(&late),
        "exited {late:+.3} s from the target: {out}"
    );
}

#[test]
fn exits_at_once_when_the_time_has_passed() {
    let started = Instant::now();
    let child = spawn(&["--until", &rfc3339(now().as_secs() - 10)]);
    let (st, _, out) = finish(child, Duration::from_secs(30));
    assert!(st.success(), "{out}");
    eprintln!("exited after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(2), "{out}");
}

#[test]
fn exits_cleanly_on_sigterm() {
    let child = spawn(&["--until", &rfc3339(now().as_secs() + 120)]);
    std::thread::sleep(Duration::from_millis(800));
    let sent = now();
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let (st, at, out) = finish(child, Duration::from_secs(30));
    assert!(st.success(), "exit {st:?}: {out}");
    assert!(out.contains("SIGTERM"), "{out}");
    let took = at.as_secs_f64() - sent.as_secs_f64();
    eprintln!("exited {took:.3} s after SIGTERM");
    assert!(took < 1.0, "{took}");
}

/// Starts just after a minute boundary (waits for one if the current
/// minute is nearly over), so the minutes below cannot roll over mid-test.
fn fresh_minute() -> u64 {
    let s = now().as_secs();
    if s % 60 >= 45 {
        std::thread::sleep(Duration::from_secs(61 - s % 60));
    }
    now().as_secs() / 60
}

/// Primer at this minute, real run at the next: the wait ends at the next
/// minute boundary.
#[test]
fn from_a_schedule_waits_for_the_run_after_its_primer() {
    let minute = fresh_minute();
    let primer = format!("{} * * * *", minute % 60);
    let real = format!("{} * * * *", (minute + 1) % 60);
    let target = (minute + 1) * 60;
    let child = spawn(&[
        "--schedule",
        &real,
        "--primer-schedule",
        &primer,
        "--max-wait-minutes",
        "2",
        "--time-zone",
        "Etc/UTC",
    ]);
    let (st, at, out) = finish(child, Duration::from_secs(120));
    assert!(st.success(), "{out}");
    assert!(out.contains(&rfc3339(target)), "{out}");
    let late = at.as_secs_f64() - target as f64;
    eprintln!("exited {late:+.3} s from the run");
    assert!(
        (0.0..1.0).contains(&late),
        "exited {late:+.3} s from the run: {out}"
    );
}

/// Primer two minutes ago, real run one minute ago (a pod that started
/// late): the workload starts now, not an hour later.
#[test]
fn from_a_schedule_starts_at_once_when_its_run_has_passed() {
    let minute = fresh_minute();
    let primer = format!("{} * * * *", (minute + 58) % 60);
    let real = format!("{} * * * *", (minute + 59) % 60);
    let started = Instant::now();
    let child = spawn(&["--schedule", &real, "--primer-schedule", &primer]);
    let (st, _, out) = finish(child, Duration::from_secs(30));
    assert!(st.success(), "{out}");
    assert!(out.contains("has passed"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(2), "{out}");
}

#[test]
fn a_bad_schedule_is_an_error() {
    let child = spawn(&["--schedule", "61 * * * *"]);
    let (st, _, out) = finish(child, Duration::from_secs(30));
    assert!(!st.success());
    assert!(
        out.contains("end of range (61) above maximum (59)"),
        "{out}"
    );
}
