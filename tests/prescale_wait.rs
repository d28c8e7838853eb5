//! `batchgate prescale-wait` as a process (the init container of a
//! PreScaledCronJob's pods): it exits 0 at (never before) a target a few
//! seconds ahead, without waiting when the run has passed, on SIGTERM, and,
//! from a schedule and primer schedule, at the real run that follows the
//! primer minute it started in. How late it exits is a duration, measured
//! (printed), not asserted: the deadlines here are generous bounds that a
//! wait for the wrong instant (the next hour, the next day) cannot meet.

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
fn exits_at_a_target_a_few_seconds_ahead_not_before() {
    let target = now().as_secs() + 4;
    let child = spawn(&["--until", &rfc3339(target)]);
    let (st, at, out) = finish(child, Duration::from_secs(60));
    assert!(st.success(), "{out}");
    assert!(out.contains("run time reached"), "{out}");
    let late = at.as_secs_f64() - target as f64;
    eprintln!("exited {late:+.3} s from the target");
    assert!(late >= 0.0, "exited {late:+.3} s before the target: {out}");
}

#[test]
fn exits_at_once_when_the_time_has_passed() {
    let started = Instant::now();
    let child = spawn(&["--until", &rfc3339(now().as_secs() - 10)]);
    let (st, _, out) = finish(child, Duration::from_secs(30));
    assert!(st.success(), "{out}");
    eprintln!("exited after {:?}", started.elapsed());
}

#[test]
fn exits_cleanly_on_sigterm() {
    // An hour ahead: only the signal can end the wait within the deadline.
    let mut child = spawn(&["--until", &rfc3339(now().as_secs() + 3600)]);
    // "holding until" is printed once the signal handler is installed.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert!(first.contains("holding until"), "{first}");
    let sent = now();
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let (st, at, out) = finish(child, Duration::from_secs(60));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = format!("{rest}{out}");
    assert!(st.success(), "exit {st:?}: {out}");
    assert!(out.contains("SIGTERM; stopping the wait"), "{out}");
    let took = at.as_secs_f64() - sent.as_secs_f64();
    eprintln!("exited {took:.3} s after SIGTERM");
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
    let (st, at, out) = finish(child, Duration::from_secs(180));
    assert!(st.success(), "{out}");
    assert!(out.contains(&rfc3339(target)), "{out}");
    assert!(out.contains("run time reached"), "{out}");
    let late = at.as_secs_f64() - target as f64;
    eprintln!("exited {late:+.3} s from the run");
    assert!(late >= 0.0, "exited {late:+.3} s before the run: {out}");
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
    assert!(!out.contains("run time reached"), "it waited: {out}");
    eprintln!("exited after {:?}", started.elapsed());
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
