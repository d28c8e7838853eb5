//! Child processes that cannot outlive the test binary.
//!
//! Three layers make sure nothing is left behind:
//! 1. [`LocalCluster::stop`](crate::LocalCluster::stop) (also run on drop) kills
//!    every component's process group and removes the temp dir.
//! 2. Each component gets `PR_SET_PDEATHSIG(SIGKILL)`. The kernel sends that
//!    signal when the *thread* that forked the child exits, so all components are
//!    spawned by one dedicated thread that lives until the process exits.
//! 3. A `sh` watchdog per cluster, in its own process group and immune to
//!    SIGINT/SIGTERM/SIGHUP, reads component pids from a pipe. If the pipe
//!    closes without a `done` line (the test binary exited, panicked out of
//!    `main`, was interrupted or SIGKILLed), it kills the process groups and
//!    removes the temp dir. This is what cleans up after [`crate::shared`],
//!    whose static is never dropped.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::thread;

use crate::Error;

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// The long-lived thread every component is forked from (see module docs).
fn spawner() -> Result<&'static mpsc::Sender<SpawnRequest>, Error> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<SpawnRequest>();
            thread::Builder::new()
                .name("localcluster-spawner".into())
                .spawn(move || {
                    // The sender lives in a static, so this loop ends only at process exit.
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
        .ok_or_else(|| {
            Error::io(
                "starting the process spawner thread",
                io::Error::other("thread creation failed"),
            )
        })
}

/// One running control-plane component.
#[derive(Debug)]
pub(crate) struct Component {
    pub name: &'static str,
    pub log: PathBuf,
    child: Child,
}

impl Component {
    /// Spawns `program args…` in its own process group with PDEATHSIG set,
    /// stdout and stderr appended to `log`.
    pub fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<Component, Error> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes
        // async-signal-safe system calls (prctl, getppid), no allocation.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let (tx, rx) = mpsc::channel();
        spawner()?
            .send((cmd, tx))
            .map_err(|_| Error::io("spawning", io::Error::other("spawner thread is gone")))?;
        let child = rx
            .recv()
            .map_err(|_| Error::io("spawning", io::Error::other("spawner thread is gone")))?
            .map_err(|e| Error::io(format!("starting {}", program.display()), e))?;
        Ok(Component { name, log, child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(description)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("exited ({status})")),
            Ok(None) => None,
            Err(e) => Some(format!("could not be waited for ({e})")),
        }
    }

    /// Builds the error for a failed component, with the tail of its log.
    pub fn failure(&self, reason: impl Into<String>) -> Error {
        Error::Component {
            component: self.name,
            reason: reason.into(),
            log: self.log.clone(),
            tail: log_tail(&self.log, 40),
        }
    }

    /// Signals the whole process group, but only while the leader is
    /// unreaped, so a recycled pid is never hit.
    fn signal(&mut self, sig: libc::c_int) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: plain kill(2) on the group led by our own unreaped child.
            unsafe {
                libc::kill(-(self.child.id() as libc::pid_t), sig);
            }
        }
    }
}

/// Kills every component's process group with SIGKILL and reaps it. The
/// cluster's state is thrown away anyway, and a graceful kube-apiserver
/// shutdown takes seconds (longer still once etcd is gone).
pub(crate) fn kill_all(components: &mut [Component]) {
    for c in components.iter_mut().rev() {
        c.signal(libc::SIGKILL);
    }
    for c in components.iter_mut() {
        let _ = c.child.wait();
    }
}

/// The last `lines` lines of a log file (best effort).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(could not read {}: {e})", path.display()),
    }
}

const WATCHDOG: &str = r#"trap '' INT TERM HUP
pids=
while IFS= read -r line; do
  case "$line" in
    "pid "*) pids="$pids ${line#pid }" ;;
    done) exit 0 ;;
  esac
done
for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; done
[ "$2" = keep ] || rm -rf -- "$1"
"#;

/// Cleans up after the test binary if it dies without calling `stop`.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Watchdog {
    pub fn start(dir: &Path, keep_dir: bool) -> Result<Watchdog, Error> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("localcluster-watchdog")
            .arg(dir)
            .arg(if keep_dir { "keep" } else { "remove" })
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| Error::io("starting the cleanup watchdog (sh)", e))?;
        let pipe = child.stdin.take();
        Ok(Watchdog { child, pipe })
    }

    /// Registers a process group the watchdog must kill if we die.
    pub fn watch(&mut self, pid: u32) {
        if let Some(pipe) = self.pipe.as_mut() {
            let _ = writeln!(pipe, "pid {pid}");
            let _ = pipe.flush();
        }
    }

    /// Normal shutdown: tell the watchdog everything is cleaned up.
    pub fn disarm(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = writeln!(pipe, "done");
        }
        let _ = self.child.wait();
    }
}
