use clap::Parser;

use batchgate::cli::{self, Cli, Command};

fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    // `batchgate dev` is an interactive session: only what is wrong is logged.
    let filter = match &args.command {
        #[cfg(feature = "dev")]
        Command::Dev(_) => "warn",
        _ => cli::DEFAULT_LOG_FILTER,
    };
    cli::init_logging(args.log_format, filter);
    let result = match args.command {
        Command::Certs(a) => cli::certs(a),
        Command::Webhooks(a) => cli::webhooks(a),
        Command::Crds(a) => cli::crds(a),
        Command::Schedule(a) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(cli::schedule::run(*a))),
        Command::PrescaleWait(a) => batchgate::cli::prescale_wait::run(a),
        #[cfg(feature = "dev")]
        Command::Dev(a) => cli::dev::run(a),
        Command::Serve(a) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(cli::serve(*a))),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
