//! `lodtensor`: the command-line tool. One file per subcommand, each with `run(args)`;
//! [`run`] parses a command line and runs it (the binary's `main`, and the Python
//! package's `lodtensor` command).
//!
//! One exit-code policy for every subcommand, [`EXIT_CODES`], printed by `--help`.

mod allocator;
mod convert;
mod demo;
mod format;
mod hist;
mod index;
mod info;
mod input;
mod open;
mod parts;
mod remote;
mod shards;
mod show;
mod side;
mod slice;
mod source;
mod text;
#[cfg(feature = "tokenize")]
mod tokenize;
mod vacuum;
mod validate;

use std::ffi::OsString;

pub use allocator::{returning_freed_memory, tune_allocator};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The exit codes of every subcommand, as `--help` prints them.
pub const EXIT_CODES: &str = "\
Exit codes (every subcommand):
  0  success (also when stdout is closed early: lodtensor show ... | head)
  1  bad data: the file is not a valid dataset (corrupt, truncated, empty, foreign, or its
     values do not fit --element-shape; a shard that disagrees with its manifest, a bad
     manifest), or it cannot be written in the output's format
  2  usage: unknown option or extension, options that do not apply, a refused output, a
     LoD operation asked of a side column
  3  I/O: a missing file or shard, a directory without a sharded dataset's manifest, a FIFO
     given as a file, a failed read or write
  4  out of range: a row, level, sequence index or column the file does not have
  5  internal error: a bug in lodtensor, not in the input (please report the message)";

/// Zero-copy LoD tensor datasets: write, inspect, validate, convert.
#[derive(Parser)]
#[command(name = "lodtensor", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the synthetic documents → sentences → tokens dataset, write it, reopen it
    /// mapped, slice it, and report sizes and timings.
    Demo(demo::Args),
    /// Columns, dtypes, element shapes, levels, sequences and lengths of a file (of a
    /// sharded dataset's manifest, for a directory).
    Info(info::Args),
    /// Draw the LoD of some rows, level by level, above the elements.
    Show(show::Args),
    /// Check every batch, column and level of a file (every shard of a directory, against
    /// its manifest too).
    Validate(validate::Args),
    /// Convert between .arrow, .parquet and Paddle .pdtensor / .pdiparams files and sharded
    /// datasets (directories).
    Convert(convert::Args),
    /// Write a row range, or one sequence of one level, as a new file.
    Slice(slice::Args),
    /// Histogram of the sequence lengths of each level.
    Hist(hist::Args),
    /// Remove the shards of a sharded dataset (a directory or a URL) that no manifest
    /// references (left by killed writers), older than a grace period; never a live
    /// writer's in a directory.
    Vacuum(vacuum::Args),
    /// Add or rebuild the lengths index of a sharded dataset (a directory or a URL): what
    /// loaders whose plans need sample lengths read instead of every shard.
    Index(index::Args),
    /// Tokenize text files, JSON lines and Parquet files with a HuggingFace tokenizer.json
    /// into a sharded dataset of token ids (a directory or a URL), on every core; a run
    /// killed and started again writes every document once.
    #[cfg(feature = "tokenize")]
    Tokenize(tokenize::Args),
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

/// Parses the command line `args` (the program's name first) and runs it: the exit code
/// of [`EXIT_CODES`], the error or clap's message printed to stderr (`--help` and
/// `--version` to stdout, exit code 0).
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> u8 {
    let command = Cli::command().mut_subcommands(|sub| sub.after_help(EXIT_CODES));
    let cli = match command
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Info(args) => info::run(args),
        Command::Show(args) => show::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Slice(args) => slice::run(args),
        Command::Hist(args) => hist::run(args),
        Command::Vacuum(args) => vacuum::run(args),
        Command::Index(args) => index::run(args),
        #[cfg(feature = "tokenize")]
        Command::Tokenize(args) => tokenize::run(args),
    };
    match result {
        Ok(()) => 0,
        Err(CliError::Lib(e)) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("lodtensor: {}", one_line(&e.to_string()));
            e.exit_code()
        }
    }
}

impl CliError {
    /// A library error with `path` attached (unless it names a file already); a usage error
    /// as it is.
    pub fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            CliError::Lib(e) => CliError::Lib(e.in_file(path)),
            usage => usage,
        }
    }

    /// The exit code of [`EXIT_CODES`] that says what went wrong.
    pub fn exit_code(&self) -> u8 {
        use lodtensor::{ArgumentError, ErrorKind};
        match self {
            CliError::Usage(_) => 2,
            CliError::Lib(e) => match e.kind() {
                // A dataset there or missing: a file's presence, as an I/O error says it.
                ErrorKind::Io(_) | ErrorKind::Dataset(_) => 3,
                ErrorKind::Internal(_) => 5,
                ErrorKind::Argument(
                    ArgumentError::NoSuchColumn(_)
                    | ArgumentError::LevelOutOfBounds { .. }
                    | ArgumentError::SequenceOutOfBounds { .. }
                    | ArgumentError::RowsOutOfBounds { .. },
                ) => 4,
                ErrorKind::Argument(ArgumentError::NotATensor { .. }) => 2,
                _ => 1,
            },
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

#[cfg(test)]
mod tests {
    use super::CliError;
    use lodtensor::{DataError, Error, FileFormat};

    #[test]
    fn exit_codes_follow_the_kinds() {
        let code = |e: Error| CliError::Lib(e).exit_code();
        assert_eq!(code(Error::invalid(FileFormat::Parquet, "x")), 1);
        assert_eq!(code(DataError::EmptyLevel { level: 0 }.into()), 1);
        assert_eq!(
            code(std::io::Error::from(std::io::ErrorKind::NotFound).into()),
            3
        );
        let io_through_arrow =
            arrow_schema::ArrowError::from(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(code(io_through_arrow.into()), 3);
        // An Arrow failure the library did not expect is its own bug.
        let bug = arrow_schema::ArrowError::ComputeError("no arrays".into());
        assert_eq!(code(bug.into()), 5);
        assert_eq!(CliError::Usage("x".into()).exit_code(), 2);
        assert_eq!(code(lodtensor::DatasetError::NothingToAppendTo.into()), 3);
        // A full disk under the Parquet writer: the I/O error it carries.
        #[cfg(feature = "parquet")]
        {
            let full = std::io::Error::from_raw_os_error(28); // ENOSPC
            let e = Error::from(parquet::errors::ParquetError::External(Box::new(full)));
            assert_eq!(code(e), 3);
        }
    }
}
