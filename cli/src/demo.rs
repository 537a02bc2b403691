//! `lodtensor demo`: the library's tour ([`lodtensor::demo`]) with a progress bar, written
//! to a directory the user keeps (`./lodtensor-demo` by default).

use std::path::PathBuf;

use lodtensor::{ArgumentError, ErrorKind};

use crate::text::progress;
use crate::{CliError, Result};

/// Arguments of `lodtensor demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Directory for the files: created when missing; an existing one must be empty or
    /// hold a previous demo's files.
    #[arg(long, default_value = "lodtensor-demo")]
    out: PathBuf,
    /// Number of documents.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    docs: u64,
    /// Seed of the synthetic data.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

pub fn run(args: Args) -> Result<()> {
    let bar = progress(args.docs, "writing", "documents");
    let docs = args.docs as usize;
    let mut written = |rows: usize| {
        bar.set_position(rows as u64);
        if rows == docs {
            bar.finish_and_clear();
        }
    };
    let out = &mut std::io::stdout().lock();
    lodtensor::demo::run(&args.out, docs, args.seed, out, &mut written).map_err(|e| {
        match e.kind() {
            // A directory the demo may not write over: choose another.
            ErrorKind::Argument(ArgumentError::InvalidArgument { op: "demo", .. }) => {
                CliError::Usage(format!("{e}; choose another with --out DIR"))
            }
            _ => e.into(),
        }
    })
}
