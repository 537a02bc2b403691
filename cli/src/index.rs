//! `lodtensor index DIR|URL`: adds or rebuilds the lengths index of a sharded dataset
//! (format-spec §7.2) in one pass: every shard measured once, one index object written,
//! the manifest committed naming it (`lodtensor::shards::index`).

use std::io::Write;
use std::path::PathBuf;

use crate::Result;
use crate::source::plural;

/// Arguments of `lodtensor index`.
#[derive(clap::Args)]
pub struct Args {
    /// The sharded dataset's directory, or its URL (`s3://bucket/prefix/`, …; credentials
    /// and endpoint from the environment, shards through the node's cache).
    dataset: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let manifest = match crate::remote::is_url(&args.dataset) {
        true => lodtensor::shards::index(crate::remote::url_location(&args.dataset)?)?,
        false => lodtensor::shards::index(args.dataset.as_path())?,
    };
    let bytes: u64 = manifest.index.iter().map(|e| e.bytes).sum();
    writeln!(
        std::io::stdout().lock(),
        "index {}: {} in {} ({bytes} bytes)",
        args.dataset.display(),
        plural(manifest.shards.len(), "shard"),
        plural(manifest.index.len(), "object"),
    )?;
    Ok(())
}
