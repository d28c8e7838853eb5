//! The hand-off of queue snapshots between the queueing controller, which
//! owns the engine, and the visibility API's listener, which answers from
//! them (the pure snapshot and answers are [`crate::queueing::visibility`]).

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use arc_swap::ArcSwapOption;
use tokio::sync::{oneshot, Notify};

use crate::queueing::{visibility::Snapshot, Explanation};

/// What the visibility listener asks the engine.
#[derive(Debug)]
pub enum Ask {
    /// Why the Workload `namespace/name` waits.
    Explain { namespace: String, name: String },
    /// What would happen to this Workload, were it created now.
    Simulate(Box<crate::api::kueue::v1beta2::Workload>),
}

/// The engine's answer: `Ok(None)` for a Workload it does not know, `Err`
/// for one it cannot read.
pub type Answer = Result<Option<Explanation>, String>;

/// A question and where its answer goes.
pub type Question = (Ask, oneshot::Sender<Answer>);

/// The queues as last snapshotted, shared between the queueing controller
/// (which takes a snapshot on its status tick, only when one was asked for
/// since the last) and the visibility listener (which asks, then waits for
/// it). Nothing is computed while nobody reads. Empty until this
/// replica's engine has listed the cluster. Every replica keeps the
/// queues: a standby's engine follows the watches without deciding, so
/// its answer shows the leader's decisions once their writes come back
/// through the watch.
#[derive(Debug, Clone, Default)]
pub struct Positions(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    snapshot: ArcSwapOption<Snapshot>,
    wanted: AtomicBool,
    taken: Notify,
    /// Explanations asked for, answered by the controller with the engine
    /// on its next tick.
    questions: std::sync::Mutex<Vec<Question>>,
}

impl Positions {
    /// Whether a reader is waiting for a snapshot (or none was taken yet);
    /// clears the request.
    pub fn wanted(&self) -> bool {
        self.0.snapshot.load().is_none() || self.0.wanted.swap(false, Ordering::AcqRel)
    }

    pub fn publish(&self, snapshot: Snapshot) {
        self.0.snapshot.store(Some(Arc::new(snapshot)));
        self.0.taken.notify_waiters();
    }

    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.0.snapshot.load_full()
    }

    /// The engine's answer to `ask`, on the controller's next tick: `Err`
    /// (outer) on a replica that keeps no queues or when no answer came
    /// within `within`.
    pub async fn ask(&self, ask: Ask, within: Duration) -> Result<Answer, ()> {
        self.current().ok_or(())?;
        let (tx, rx) = oneshot::channel();
        self.0
            .questions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((ask, tx));
        match tokio::time::timeout(within, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            _ => Err(()),
        }
    }

    /// The questions asked since the last call (the controller answers).
    pub fn questions(&self) -> Vec<Question> {
        std::mem::take(&mut *self.0.questions.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A snapshot taken after this call, or after `within` the latest one;
    /// `None` at once on a replica that keeps no queues.
    pub async fn fresh(&self, within: Duration) -> Option<Arc<Snapshot>> {
        self.current()?;
        let taken = self.0.taken.notified();
        tokio::pin!(taken);
        taken.as_mut().enable();
        self.0.wanted.store(true, Ordering::Release);
        let _ = tokio::time::timeout(within, taken).await;
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot other than the default one.
    fn one_queue() -> Snapshot {
        Snapshot {
            cluster_queues: [("cq".to_string(), Vec::new())].into(),
            local_queues: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_reader_gets_a_snapshot_taken_after_it_asked() {
        let positions = Positions::default();
        // A replica that keeps no queues answers at once.
        assert!(positions.fresh(Duration::from_secs(60)).await.is_none());
        assert!(positions.wanted(), "the first snapshot is always wanted");
        positions.publish(Snapshot::default());
        assert!(!positions.wanted(), "nobody asked since");
        // The controller's side: a snapshot only when asked, then the reader
        // gets that one.
        let controller = positions.clone();
        let tick = tokio::spawn(async move {
            for _ in 0..2_000 {
                if controller.wanted() {
                    controller.publish(one_queue());
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        });
        let got = positions.fresh(Duration::from_secs(60)).await.unwrap();
        assert_eq!(*got, one_queue());
        assert!(tick.await.unwrap());
    }
}
