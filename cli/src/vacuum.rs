//! `lodtensor vacuum DATASET`: removes the shards of a sharded dataset (a directory or a
//! URL) that no manifest references (what killed or failed writers left), once older than
//! a grace period; never a live writer's files in a directory
//! (`lodtensor::shards::vacuum`, `vacuum_with`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::Result;
use crate::source::plural;

/// Arguments of `lodtensor vacuum`.
#[derive(clap::Args)]
pub struct Args {
    /// The sharded dataset: a directory, or a URL (credentials from the environment).
    dir: PathBuf,
    /// Remove only files last modified more than SECONDS ago (default one day).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
    grace: u64,
}

pub fn run(args: Args) -> Result<()> {
    let grace = Duration::from_secs(args.grace);
    let removed: Vec<String> = match crate::remote::is_url(&args.dir) {
        true => crate::remote::vacuum(&args.dir, grace)?,
        false => (lodtensor::shards::vacuum(&args.dir, grace)?.iter())
            .map(|p| p.display().to_string())
            .collect(),
    };
    let out = &mut std::io::stdout().lock();
    for path in &removed {
        writeln!(out, "removed {path}")?;
    }
    writeln!(
        out,
        "vacuum {}: {} removed (grace {} s)",
        args.dir.display(),
        plural(removed.len(), "file"),
        args.grace
    )?;
    Ok(())
}
