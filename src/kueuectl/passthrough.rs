//! The commands kueuectl hands to kubectl unchanged (`kubectl kueue
//! get|describe|edit|delete ...` on Kueue's kinds): the flags kept, kubectl
//! found on PATH and exec'd.
use super::{
    args::{KubeFlags, PassThrough},
    error::Error,
};

/// Hands `verb KIND args...` to kubectl, with the kubeconfig flags given
/// before the verb; replaces this process.
pub(super) fn pass_through(verb: &str, what: &PassThrough, kube: &KubeFlags) -> Result<(), Error> {
    let (kind, rest) = what.split();
    let mut argv: Vec<String> = vec![verb.to_string(), kind.resource().to_string()];
    argv.extend(rest.iter().cloned());
    if let Some(k) = &kube.kubeconfig {
        argv.push(format!("--kubeconfig={}", k.display()));
    }
    if let Some(c) = &kube.context {
        argv.push(format!("--context={c}"));
    }
    if let Some(n) = &kube.namespace {
        argv.push(format!("--namespace={n}"));
    }
    exec_kubectl(&argv)
}

pub(super) fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

pub(super) fn exec_kubectl(argv: &[String]) -> Result<(), Error> {
    let Some(kubectl) = find_on_path("kubectl") else {
        return Err(Error::Usage(format!(
            "pass-through command are not available: exec: \"kubectl\": executable file not found in $PATH, PATH={:?}",
            std::env::var("PATH").unwrap_or_default()
        )));
    };
    use std::os::unix::process::CommandExt;
    let e = std::process::Command::new(&kubectl).args(argv).exec();
    Err(Error::Io(e))
}

// ----------------------------------------------------------------- version
