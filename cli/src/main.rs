//! The `lodtensor` binary: [`lodtensor_cli::run`] over the process's arguments.

use std::process::ExitCode;

/// mimalloc, not the system's malloc: `lodtensor tokenize` spends much of its time
/// allocating (the `tokenizers` crate's pre-tokens), 26% less CPU with it
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    lodtensor_cli::tune_allocator();
    ExitCode::from(lodtensor_cli::run(std::env::args_os()))
}
