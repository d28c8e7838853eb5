//! The plugin's one error type: what it prints after `Error: `.

use super::{quota::QuotaError, taint::TaintError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad arguments, in upstream's words.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Quota(#[from] QuotaError),
    #[error(transparent)]
    Taint(#[from] TaintError),
    /// The apiserver refused: its message, as kubectl shows it.
    #[error("{0}")]
    Api(String),
    #[error("{0}")]
    Kube(kube::Error),
    /// A go-template failed: its debugging text (for stdout) and message.
    #[error("{message}")]
    Template { stdout: String, message: String },
    #[error("reading the kubeconfig: {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Yaml(#[from] serde_yaml::Error),
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => Error::Api(s.message.clone()),
            other => Error::Kube(other),
        }
    }
}

impl Error {
    /// The apiserver said the object is not there.
    pub fn is_not_found(e: &kube::Error) -> bool {
        matches!(e, kube::Error::Api(s) if s.code == 404)
    }
}
