//! MultiKueue on the manager: pure decisions about worker clusters.
pub mod dispatch;
