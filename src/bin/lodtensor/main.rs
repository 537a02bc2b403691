//! `lodtensor`: the command-line tool. One file per subcommand, each with `run(args)`.
//!
//! Exit codes: 0 on success (and when stdout is closed early, `lodtensor … | head`), 1 when
//! a file is missing, unreadable or invalid, 2 for a usage error (clap's, an unsupported
//! extension, options that do not apply).

mod convert;
mod demo;
mod draw;
mod hist;
mod info;
mod show;
mod slice;
mod source;
mod validate;

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
    /// Columns, dtypes, element shapes, levels, sequences and lengths of a file.
    Info(info::Args),
    /// Draw the LoD of some rows, level by level, above the elements.
    Show(show::Args),
    /// Check every batch, column and level of a file.
    Validate(validate::Args),
    /// Convert between .arrow, .parquet and Paddle .pdtensor / .pdiparams files.
    Convert(convert::Args),
    /// Write a row range, or one sequence of one level, as a new file.
    Slice(slice::Args),
    /// Histogram of the sequence lengths of each level.
    Hist(hist::Args),
}

/// The error of a subcommand: a library error (exit code 1) or a usage error (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file that is missing, unreadable or invalid, or a failed write.
    #[error(transparent)]
    Lib(#[from] lodtensor::Error),
    /// Arguments that do not fit the files or each other.
    #[error("{0}")]
    Usage(String),
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Lib(e.into())
    }
}

/// The result of a subcommand.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// A usage error.
pub fn usage<T>(message: impl Into<String>) -> Result<T> {
    Err(CliError::Usage(message.into()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Info(args) => info::run(args),
        Command::Show(args) => show::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Slice(args) => slice::run(args),
        Command::Hist(args) => hist::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Lib(e)) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lodtensor: {}", one_line(&e.to_string()));
            match e {
                CliError::Lib(_) => ExitCode::FAILURE,
                CliError::Usage(_) => ExitCode::from(2),
            }
        }
    }
}

/// A message on one line: some errors from below (the flatbuffers verifier's) span several.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A closed stdout (`lodtensor … | head`) is not a failure.
fn is_broken_pipe(e: &lodtensor::Error) -> bool {
    matches!(e.kind(), lodtensor::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}
