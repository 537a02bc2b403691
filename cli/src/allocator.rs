//! mimalloc's settings for a process that makes it its allocator: the `lodtensor` binary
//! and the Python package's native module both call [`tune_allocator`] at start.

use std::ffi::{c_int, c_long};

// The crate that defines the options' functions, linked whoever calls this module.
extern crate mimalloc as _;

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` (`mimalloc.h`, the same
/// in mimalloc v2 and v3), which `libmimalloc-sys` compiles in but does not name.
const PURGE_DELAY: c_int = 15;

unsafe extern "C" {
    /// Sets a mimalloc option (`mimalloc.h`); `libmimalloc-sys`, which the `mimalloc`
    /// crate links in, defines it.
    fn mi_option_set(option: c_int, value: c_long);
    /// Reads a mimalloc option (`mimalloc.h`).
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> c_long;
}

/// Makes mimalloc give freed memory back to the system at once rather than a second later
/// (unless the environment sets `MIMALLOC_PURGE_DELAY`). `lodtensor convert` of a Parquet
/// file frees a row group's and a batch's buffers while it allocates the next ones, and a
/// loader's plan frees the epoch's order once each rank's batches are cut: the delay kept
/// both resident. With `no_thp` (cli/Cargo.toml) `convert`'s peak RSS is what it was with
/// the system's allocator, and a rank's start over 100,000 shards peaks at +127 MiB, not
/// +176 (issues 38 and 39, docs/performance.md); `tokenize` took no more CPU than within
/// the machine's spread.
pub fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` takes an option of `mi_option_e` and a value, plain
        // integers; `PURGE_DELAY` is that option's place, and 0 is a value it takes
        // ("use 0 for immediate purging", `mimalloc.h`).
        unsafe { mi_option_set(PURGE_DELAY, 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_is_the_option_set_and_becomes_0() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads an option of `mi_option_e`, a plain integer.
        let read = || unsafe { mi_option_get(PURGE_DELAY) };
        assert_eq!(read(), 1000, "mimalloc v3's default purge delay, 1000 ms");
        tune_allocator();
        assert_eq!(read(), 0);
    }
}
