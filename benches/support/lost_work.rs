//! Work lost to evictions, as issue 40 counts it: each time a Workload
//! holding quota is evicted, the time it held it in that run times its
//! request (mCPU·ms). Read from a Workload watch of the bench's own (one
//! for every system measured: the apiserver serves it the same events
//! either way), through kube-rs's watcher, which resumes a closed watch
//! where it left off; times are when the bench saw each change.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
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
    /// `mcpu`: each Workload class's request.
    pub fn watch(kubeconfig: &Path, mcpu: HashMap<String, f64>) -> LostWork {
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
                let mut held: HashMap<String, f64> = HashMap::new();
                let mut seen = HashSet::new();
                let mut lost = Lost::default();
                let mut stopped = stopped;
                loop {
                    let wl = tokio::select! {
                        ev = events.next() => match ev {
                            Some(Ok(wl)) => wl,
                            Some(Err(_)) => { lost.errors += 1; continue; }
                            None => break,
                        },
                        _ = &mut stopped => break,
                    };
                    let now = start.elapsed().as_secs_f64() * 1000.0;
                    let uid = wl.metadata.uid.clone().unwrap_or_default();
                    step(&mut held, &mut lost, &line(&wl), now, &mcpu);
                    if held.contains_key(&uid) {
                        seen.insert(uid);
                    }
                }
                lost.admitted = seen.len() as u64;
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

/// A Workload as one line: uid, class, then the status of its
/// QuotaReserved, Evicted and Finished conditions (empty when absent).
fn line(wl: &DynamicObject) -> String {
    let condition = |t: &str| {
        wl.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == t)
            .and_then(|c| c["status"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let class = wl
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CLASS_LABEL))
        .map_or("", String::as_str);
    format!(
        "{}|{class}|{}|{}|{}",
        wl.metadata.uid.as_deref().unwrap_or_default(),
        condition("QuotaReserved"),
        condition("Evicted"),
        condition("Finished"),
    )
}

/// One watch line at `now_ms`: a Workload holds quota while reserved and
/// neither evicted nor finished; losing it by eviction loses the time held.
fn step(
    held: &mut HashMap<String, f64>,
    lost: &mut Lost,
    line: &str,
    now_ms: f64,
    mcpu: &HashMap<String, f64>,
) {
    let f: Vec<&str> = line.split('|').collect();
    let [uid, class, reserved, evicted, finished] = f[..] else {
        return;
    };
    let holds = reserved == "True" && evicted != "True" && finished != "True";
    match (holds, held.get(uid).copied()) {
        (true, None) => {
            held.insert(uid.to_string(), now_ms);
        }
        (false, Some(since)) => {
            held.remove(uid);
            if evicted == "True" {
                lost.victims += 1;
                lost.mcpu_ms += (now_ms - since) * mcpu.get(class).copied().unwrap_or(0.0);
            }
        }
        _ => {}
    }
}

/// The tally over a run of lines as the watch prints them (the bench checks
/// it before a smoke run).
pub fn self_check() {
    let mcpu = HashMap::from([("small".to_string(), 1000.0)]);
    let (mut held, mut lost) = (HashMap::new(), Lost::default());
    for (line, at) in [
        ("u1|small|||", 0.0),
        ("u1|small|True||", 100.0),
        ("u1|small|True|True|", 600.0), // evicted after 500 ms
        ("u1|small|False|True|", 700.0),
        ("u1|small|True|False|", 1000.0),     // readmitted
        ("u1|small|True|False|True", 3000.0), // finished: nothing lost
        ("u2|small|True||", 0.0),
        ("u2|small|True|True|", 250.0),
    ] {
        step(&mut held, &mut lost, line, at, &mcpu);
    }
    assert_eq!(lost.victims, 2, "{lost:?}");
    assert_eq!(lost.mcpu_ms, 750.0 * 1000.0, "{lost:?}");
}
