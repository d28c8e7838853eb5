use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while building, starting or driving a [`crate::LocalCluster`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `tests/cluster/build.sh` failed or its output is unusable.
    #[error("building the control-plane binaries failed: {0}")]
    Build(String),

    /// A filesystem or process operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },

    /// Certificate or key generation failed.
    #[error("generating the cluster PKI: {0}")]
    Pki(#[from] rcgen::Error),

    /// A control-plane component exited or never became ready.
    #[error("{component} {reason} (log: {})\n--- last lines of the {component} log ---\n{tail}", log.display())]
    Component {
        component: &'static str,
        reason: String,
        log: PathBuf,
        tail: String,
    },

    /// A kubectl invocation made by the launcher failed.
    #[error("`kubectl {args}` failed ({status}): {stderr}")]
    Kubectl {
        args: String,
        status: String,
        stderr: String,
    },

    /// Something did not happen in time.
    #[error("timed out after {:.1}s waiting for {what}{detail}", after.as_secs_f64())]
    Timeout {
        what: String,
        after: Duration,
        detail: String,
    },

    /// The options passed to [`crate::LocalCluster::start`] are invalid.
    #[error("invalid cluster options: {0}")]
    Options(String),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// True when a component failed because its port was taken by someone
    /// else between choosing it and binding it; `start` retries those.
    pub(crate) fn is_port_conflict(&self) -> bool {
        matches!(self, Error::Component { tail, .. } if tail.contains("address already in use"))
    }
}
