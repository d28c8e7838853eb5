//! `kubectl kueue` (also runnable as `kueuectl`): everyday administration
//! of Kueue queues and workloads without YAML, with upstream kueuectl's
//! commands, flags, columns and messages.
//!
//! The pure core: [`args`] (the command line), [`quota`] (the quota
//! syntax and resource-group merging), [`taint`] (taints and tolerations),
//! [`listing`] (rows, statuses, exec time and positions with `now` as a
//! parameter) and [`table`] (kubectl's table layout). The shell: [`run`]
//! (the commands and their apiserver calls), `session` (the kubeconfig with
//! kubectl's flags, the client), `output` (printing objects, paged lists
//! and tables) and `passthrough` (the commands exec'd as kubectl).

pub mod args;
pub mod error;
pub mod explain;
pub mod goprint;
pub mod gotemplate;
pub mod help;
pub mod jsonpath;
pub mod listing;
mod output;
mod passthrough;
pub mod positions;
pub mod printer;
pub mod quota;
pub mod run;
mod session;
pub mod table;
pub mod taint;

pub use error::Error;

/// The plugin's entry point: parses `argv` (the program name, from
/// argv[0], may be `kubectl-kueue` or `kueuectl`), runs, and returns the
/// exit code.
pub fn main_with_args(argv: Vec<std::ffi::OsString>) -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    let bin = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .filter(|n| *n == "kueuectl")
        .map(|_| "kueuectl");
    let mut cmd = args::Cli::command();
    if let Some(name) = bin {
        cmd = cmd.name(name).bin_name(name);
    }
    let cmd = help::decorate(cmd, "", bin.unwrap_or("kubectl kueue"));
    let cli = match cmd
        .clone()
        .try_get_matches_from(argv)
        .and_then(|m| args::Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
    };
    if cli.command.is_none() {
        // Upstream prints the help and exits 0 when given no command.
        let mut cmd = cmd;
        let _ = cmd.print_help();
        return 0;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = rt
        .block_on(run::run(cli, &mut out))
        .and_then(|()| std::io::Write::flush(&mut out).map_err(Error::from));
    match result {
        Ok(()) => 0,
        // The reader stopped reading (`completion bash | head`): nothing
        // went wrong that a user could fix.
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            use std::io::Write;
            // A failed go-template's partial output and debugging text go
            // to stdout, as kubectl's printer writes them.
            if let Error::Template { stdout, .. } = &e {
                let _ = out.write_all(stdout.as_bytes());
            }
            let _ = out.flush();
            eprintln!("Error: {e}");
            1
        }
    }
}
