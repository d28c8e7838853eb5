//! Work lost to evictions, as issue 40 counts it: each time a Workload
//! holding quota is evicted, the time it held it in that run times its
//! request (mCPU·ms). Read from a Workload watch of the bench's own (one
//! for every system measured: the apiserver serves it the same events
//! either way), through kube-rs's watcher, which resumes a closed watch
//! where it left off; times are when the bench saw each change. With a
//! journal path it also writes one line per change it tallies (first seen,
//! reserved, evicted, finished), with the eviction's `Preempted` reason and
//! preemptor, to read which preemptions each system makes.

use std::{
    collections::{HashMap, HashSet},
    io::Write,
    path::{Path, PathBuf},
    thread::JoinHandle,
    time::Instant,
};

use futures::StreamExt;
use kube::{
    api::{ApiResource, DynamicObject},
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{watcher, WatchStreamExt},
    Api, Client,
};

/// What the watch saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Lost {
    /// Evictions of a Workload that held quota.
    pub victims: u64,
    /// Σ request × time held before each of those evictions.
    pub mcpu_ms: f64,
    /// Workloads the watch saw hold quota at least once.
    pub admitted: u64,
    /// Errors the watch met (it resumes after each).
    pub errors: u64,
}

pub struct LostWork {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    reader: Option<JoinHandle<Result<Lost, String>>>,
}

const CLASS_LABEL: &str = "kueue.x-k8s.io/performance-scheduler-class";

impl LostWork {
    /// Starts watching every Workload of the cluster `kubeconfig` names;
    /// `mcpu`: each Workload class's request; `journal`: where to write
    /// what it saw, line by line (tab-separated).
    pub fn watch(
        kubeconfig: &Path,
        mcpu: HashMap<String, f64>,
        journal: Option<PathBuf>,
    ) -> LostWork {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let kubeconfig = kubeconfig.to_path_buf();
        let reader = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async move {
                let kc = Kubeconfig::read_from(&kubeconfig).map_err(|e| e.to_string())?;
                let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let client = Client::try_from(cfg).map_err(|e| e.to_string())?;
                let ar = ApiResource {
                    group: "kueue.x-k8s.io".into(),
                    version: "v1beta2".into(),
                    api_version: "kueue.x-k8s.io/v1beta2".into(),
                    kind: "Workload".into(),
                    plural: "workloads".into(),
                };
                let api = Api::<DynamicObject>::all_with(client, &ar);
                let events = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .touched_objects();
                futures::pin_mut!(events);
                let start = Instant::now();
                let mut tally = Tally::default();
                let mut journal = match journal {
                    Some(p) => Some(std::io::BufWriter::new(
                        std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?,
                    )),
                    None => None,
                };
                let mut stopped = stopped;
                loop {
                    let wl = tokio::select! {
                        ev = events.next() => match ev {
                            Some(Ok(wl)) => wl,
                            Some(Err(_)) => { tally.lost.errors += 1; continue; }
                            None => break,
                        },
                        _ = &mut stopped => break,
                    };
                    let now = start.elapsed().as_secs_f64() * 1000.0;
                    let s = state(&wl);
                    let seen = tally.step(&s, now, &mcpu);
                    if let (Some(j), Some(change)) = (journal.as_mut(), seen) {
                        writeln!(j, "{now:.0}\t{}\t{change}\t{}", s.uid, line(&wl, s.class))
                            .map_err(|e| format!("the journal: {e}"))?;
                    }
                }
                if let Some(j) = journal.as_mut() {
                    j.flush().map_err(|e| e.to_string())?;
                }
                let mut lost = tally.lost;
                lost.admitted = tally.admitted.len() as u64;
                Ok(lost)
            })
        });
        LostWork {
            stop: Some(stop),
            reader: Some(reader),
        }
    }

    /// Stops the watch; what it saw until now.
    pub fn stop(mut self) -> Result<Lost, String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let reader = self.reader.take().expect("stopped once");
        reader
            .join()
            .map_err(|_| "the watch thread panicked".to_string())?
    }
}

/// A run that fails before `stop` leaves no watch behind.
impl Drop for LostWork {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// What the tally reads of one Workload event: its uid, class, and the
/// status of its QuotaReserved, Evicted and Finished conditions (empty
/// when absent).
struct State<'a> {
    uid: &'a str,
    class: &'a str,
    reserved: &'a str,
    evicted: &'a str,
    finished: &'a str,
}

fn state(wl: &DynamicObject) -> State<'_> {
    let condition = |t: &str| {
        wl.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == t)
            .and_then(|c| c["status"].as_str())
            .unwrap_or_default()
    };
    State {
        uid: wl.metadata.uid.as_deref().unwrap_or_default(),
        class: wl
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CLASS_LABEL))
            .map_or("", String::as_str),
        reserved: condition("QuotaReserved"),
        evicted: condition("Evicted"),
        finished: condition("Finished"),
    }
}

/// A journal line's tail: class, ClusterQueue, the `Preempted`
/// condition's reason and message (which names the preemptor's UID).
fn line(wl: &DynamicObject, class: &str) -> String {
    let preempted = wl.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Preempted" && c["status"] == "True");
    format!(
        "{class}\t{}\t{}\t{}",
        wl.data["status"]["admission"]["clusterQueue"]
            .as_str()
            .unwrap_or_default(),
        preempted
            .and_then(|c| c["reason"].as_str())
            .unwrap_or_default(),
        preempted
            .and_then(|c| c["message"].as_str())
            .unwrap_or_default()
            .replace(['\t', '\n'], " "),
    )
}

#[derive(Default)]
struct Tally {
    /// Since when each Workload holding quota has held it (ms).
    held: HashMap<String, f64>,
    /// Every Workload seen holding quota.
    admitted: HashSet<String>,
    /// Every Workload seen before it held quota.
    seen: HashSet<String>,
    lost: Lost,
}

impl Tally {
    /// One event at `now_ms`: a Workload holds quota while reserved and
    /// neither evicted nor finished; losing it by eviction loses the time
    /// held. Returns the change, if it was one (for the journal).
    fn step(&mut self, s: &State<'_>, now_ms: f64, mcpu: &HashMap<String, f64>) -> Option<String> {
        let holds = s.reserved == "True" && s.evicted != "True" && s.finished != "True";
        match (holds, self.held.get(s.uid).copied()) {
            (true, None) => {
                self.held.insert(s.uid.to_string(), now_ms);
                let first = self.admitted.insert(s.uid.to_string());
                Some(if first { "reserved" } else { "reserved again" }.to_string())
            }
            (false, Some(since)) => {
                self.held.remove(s.uid);
                if s.evicted == "True" {
                    self.lost.victims += 1;
                    self.lost.mcpu_ms +=
                        (now_ms - since) * mcpu.get(s.class).copied().unwrap_or(0.0);
                    Some(format!("evicted after {:.0}", now_ms - since))
                } else if s.finished == "True" {
                    Some("finished".to_string())
                } else {
                    Some("released".to_string())
                }
            }
            // First sight of one not holding quota; one first seen holding
            // it was journalled as reserved, and is not "seen" after.
            (false, None) if !self.seen.contains(s.uid) && !self.admitted.contains(s.uid) => {
                self.seen.insert(s.uid.to_string());
                Some("seen".to_string())
            }
            _ => None,
        }
    }
}

/// The tally over a run of events (the bench checks it before a smoke
/// run): uid, then the three conditions' status, at a time in ms.
pub fn self_check() {
    let mcpu = HashMap::from([("small".to_string(), 1000.0)]);
    let mut tally = Tally::default();
    let mut changes = Vec::new();
    for ((uid, reserved, evicted, finished), at) in [
        (("u1", "", "", ""), 0.0),
        (("u1", "True", "", ""), 100.0),
        (("u1", "True", "True", ""), 600.0), // evicted after 500 ms
        (("u1", "False", "True", ""), 700.0),
        (("u1", "True", "False", ""), 1000.0),     // readmitted
        (("u1", "True", "False", "True"), 3000.0), // finished: nothing lost
        (("u2", "True", "", ""), 0.0),
        (("u2", "True", "True", ""), 250.0),
        (("u2", "False", "True", ""), 300.0), // first seen reserved: not "seen" now
    ] {
        let s = State {
            uid,
            class: "small",
            reserved,
            evicted,
            finished,
        };
        changes.push(tally.step(&s, at, &mcpu));
    }
    let want = [
        Some("seen"),
        Some("reserved"),
        Some("evicted after 500"),
        None,
        Some("reserved again"),
        Some("finished"),
        Some("reserved"),
        Some("evicted after 250"),
        None,
    ];
    assert_eq!(
        changes,
        want.map(|c| c.map(str::to_string)),
        "the journal's changes"
    );
    assert_eq!(tally.lost.victims, 2, "{:?}", tally.lost);
    assert_eq!(tally.lost.mcpu_ms, 750.0 * 1000.0, "{:?}", tally.lost);
    assert_eq!(tally.admitted.len(), 2);
}
