//! `lodtensor`: the command-line tool. One file per subcommand, each with `run(args)`.

mod demo;
mod draw;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Zero-copy LoD tensor datasets: write, inspect, validate, convert.
#[derive(Parser)]
#[command(name = "lodtensor", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the synthetic documents → sentences → tokens dataset, write it, reopen it
    /// mapped, slice it, and report sizes and timings.
    Demo(demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lodtensor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A closed stdout (`lodtensor … | head`) is not a failure.
fn is_broken_pipe(e: &lodtensor::Error) -> bool {
    matches!(e.root(), lodtensor::Error::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}
