//! The peak RSS of opening a sharded dataset whose manifest lists a million shards, next to
//! the manifest's size: `cargo run --release --example manifest_rss [SHARDS]`.
//!
//! The manifest is written first (one column of one level, as `ShardWriter` writes it); a
//! child process then opens it and reports its own peak RSS, so the writing's memory is not
//! counted.

use std::process::Command;

use lodtensor::shards::{
    ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry, ShardedDataset,
};
use lodtensor::{DType, OffsetWidth};

/// This process's peak RSS (`VmHWM`; `getrusage`'s survives `exec` and so would count
/// the parent's writing).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, mode, dir] = args.as_slice()
        && mode == "--open"
    {
        let before = peak_rss_kib();
        let data = ShardedDataset::open(dir)?;
        println!(
            "{} shards opened: peak RSS {} KiB (before opening {} KiB)",
            data.num_shards(),
            peak_rss_kib(),
            before
        );
        return Ok(());
    }
    let shards: usize = args.get(1).map_or(Ok(1_000_000), |s| s.parse())?;
    let dir = tempfile::tempdir()?;
    let manifest = Manifest {
        columns: vec![ColumnSpec {
            name: "tokens".into(),
            dtype: DType::Int64,
            element_shape: vec![],
            offsets: vec![OffsetWidth::I64],
            level_names: vec![],
            side: None,
        }],
        shards: (0..shards)
            .map(|i| ShardEntry {
                file: format!("part-{i:07}.arrow"),
                rows: 1000,
                batches: 1,
                bytes: 1_234_567,
                crc32c: 0xdead_beef,
                columns: vec![ColumnStats {
                    sequences: vec![1000],
                    elements: 50_000,
                }],
            })
            .collect(),
        index: Vec::new(),
    };
    let path = dir.path().join(MANIFEST_NAME);
    manifest.write(&path)?;
    drop(manifest);
    println!("manifest: {} bytes", std::fs::metadata(&path)?.len());
    let status = Command::new(std::env::current_exe()?)
        .arg("--open")
        .arg(dir.path())
        .status()?;
    assert!(status.success());
    Ok(())
}
