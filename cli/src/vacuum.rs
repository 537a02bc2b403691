//! `lodtensor vacuum DIR`: removes the files of a sharded dataset's directory that no
//! manifest references (what killed or failed writers left), once older than a grace
//! period; never a live writer's files (`lodtensor::shards::vacuum`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::Result;
use crate::source::plural;

/// Arguments of `lodtensor vacuum`.
#[derive(clap::Args)]
pub struct Args {
    /// The sharded dataset's directory.
    dir: PathBuf,
    /// Remove only files last modified more than SECONDS ago (default one day).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400)]
    grace: u64,
}

pub fn run(args: Args) -> Result<()> {
    let removed = lodtensor::shards::vacuum(&args.dir, Duration::from_secs(args.grace))?;
    let out = &mut std::io::stdout().lock();
    for path in &removed {
        writeln!(out, "removed {}", path.display())?;
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
