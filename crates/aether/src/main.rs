//! The `aether` binary: parses arguments, runs the command, and turns every error into a
//! message and an exit code (never a panic or a backtrace).

use std::process::ExitCode;

use aether::cli::Cli;
use clap::Parser;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("aether: internal error: {info}");
        eprintln!("This is a bug in Aether; please report it with the command that caused it.");
    }));
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(cli.run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
