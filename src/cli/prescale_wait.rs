//! `batchgate prescale-wait`: the init container a PreScaledCronJob puts
//! first in its CronJob's pods. The pod starts at the primer time, holds
//! its node (warm) and lets the workload start at the real scheduled time.
//!
//! The instant comes from the core ([`crate::prescale::instant::wait`]):
//! the real run that follows the primer run that started this pod, in the
//! CronJob's time zone, found from this process's own start time (the
//! downward API cannot give a pod's creation time, and reading it from the
//! API would need RBAC in every namespace, upstream's trap). A pod that
//! starts after its run's time (a slow scale-up) starts the workload at
//! once rather than a period later. SIGTERM or SIGINT end the wait with
//! exit 0.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _, Result};
use chrono::DateTime;
use clap::Args;

use crate::prescale::{
    self,
    cron::Schedule,
    instant::{wait, Wait},
};

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The real schedule (the PreScaledCronJob's cronJob.spec.schedule).
    #[arg(long, required_unless_present = "until")]
    pub schedule: Option<String>,
    /// The primer schedule the pod was started on.
    #[arg(long)]
    pub primer_schedule: Option<String>,
    /// The schedules' time zone (cronJob.spec.timeZone); default UTC.
    #[arg(long)]
    pub time_zone: Option<String>,
    /// Start at once, rather than wait longer than this many minutes after
    /// the primer time (no run follows within the warm-up window).
    #[arg(long)]
    pub max_wait_minutes: Option<i64>,
    /// Wait until this instant (RFC 3339) instead of computing it.
    #[arg(long, conflicts_with_all = ["schedule", "primer_schedule"])]
    pub until: Option<String>,
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn show(unix: i64) -> String {
    DateTime::from_timestamp(unix, 0)
        .map(|t| t.to_rfc3339())
        .unwrap_or_else(|| unix.to_string())
}

/// The instant to wait for (Unix seconds), or `None` to start now.
fn target(a: &WaitArgs, started: i64) -> Result<Option<i64>> {
    if let Some(u) = &a.until {
        let t = DateTime::parse_from_rfc3339(u)
            .with_context(|| format!("--until {u:?}: not an RFC 3339 instant"))?;
        return Ok(Some(t.timestamp()));
    }
    let Some(text) = a.schedule.as_deref() else {
        bail!("--schedule is required");
    };
    let real = Schedule::parse(text).with_context(|| format!("--schedule {text:?}"))?;
    let primer = match a.primer_schedule.as_deref() {
        Some(p) => Some(Schedule::parse(p).with_context(|| format!("--primer-schedule {p:?}"))?),
        None => None,
    };
    let Some(tz) = prescale::zone(a.time_zone.as_deref()) else {
        bail!(
            "--time-zone {:?}: unknown time zone",
            a.time_zone.as_deref().unwrap_or_default()
        );
    };
    let max = a.max_wait_minutes.map(|m| m * 60);
    Ok(match wait(&real, primer.as_ref(), tz, started, max) {
        Wait::Until(t) => {
            println!(
                "prescale-wait: holding until {} (in {} s), the run of {text:?} this pod was primed for",
                show(t),
                t - started
            );
            Some(t)
        }
        Wait::Passed { run } => {
            println!(
                "prescale-wait: the run of {text:?} at {} has passed; starting the workload now",
                show(run)
            );
            None
        }
        Wait::NoRunInWindow { primer, next_run } => {
            println!(
                "prescale-wait: no run of {text:?} follows the primer run at {} within {} minutes (next: {}; a daylight-saving change?); starting the workload now rather than holding the node",
                show(primer),
                a.max_wait_minutes.unwrap_or_default(),
                next_run.map(show).unwrap_or_else(|| "none".into())
            );
            None
        }
    })
}

/// The subcommand: exits 0 at the target, at once when it has passed, and
/// on SIGTERM/SIGINT.
pub fn run(a: WaitArgs) -> Result<()> {
    let started = now().as_secs() as i64;
    let Some(t) = target(&a, started)? else {
        return Ok(());
    };
    let deadline = Duration::from_secs(t.max(0) as u64);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        // Printed once SIGTERM is handled, so a reader of this line may
        // signal at once.
        if a.until.is_some() {
            println!("prescale-wait: holding until {}", show(t));
        }
        loop {
            let left = deadline.saturating_sub(now());
            if left.is_zero() {
                println!("prescale-wait: run time reached; starting the workload");
                return Ok(());
            }
            tokio::select! {
                _ = tokio::time::sleep(left) => {}
                _ = term.recv() => {
                    println!("prescale-wait: SIGTERM; stopping the wait");
                    return Ok(());
                }
                _ = tokio::signal::ctrl_c() => {
                    println!("prescale-wait: SIGINT; stopping the wait");
                    return Ok(());
                }
            }
        }
    })
}
