//! The main job: the built-in synthetic dataset written, mapped, sliced, scanned, expanded
//! and exported to Parquet, each step timed ([`lodtensor::demo`]); the files stay in
//! `lodtensor-demo/` (or the directory given).
//!
//! ```sh
//! cargo run --release -p lodtensor --example demo [DIR]
//! ```

use std::path::PathBuf;

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("lodtensor-demo"), PathBuf::from);
    let out = &mut std::io::stdout().lock();
    if let Err(e) = lodtensor::demo::run(&dir, 2000, 42, out, &mut |_| {}) {
        eprintln!("demo: {e}");
        std::process::exit(1);
    }
}
