//! mimalloc's settings for a process that makes it its allocator: the `lodtensor` binary
//! calls [`tune_allocator`] at start; the Python package's native module keeps mimalloc's
//! delay, and reads its loaders' lengths and plans their epochs within
//! [`returning_freed_memory`].

use std::ffi::{c_int, c_long};
use std::sync::{Mutex, PoisonError};

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
    fn mi_option_get(option: c_int) -> c_long;
    /// Frees what mimalloc holds and can free; with `force`, purges the memory whose
    /// purge is delayed at once (`mimalloc.h`).
    fn mi_collect(force: bool);
}

/// mimalloc's purge delay, in milliseconds.
fn purge_delay() -> c_long {
    // SAFETY: `mi_option_get` takes an option of `mi_option_e`, a plain integer;
    // `PURGE_DELAY` is that option's place.
    unsafe { mi_option_get(PURGE_DELAY) }
}

/// Sets mimalloc's purge delay to `ms` milliseconds (0: freed memory given back at once).
fn set_purge_delay(ms: c_long) {
    // SAFETY: `mi_option_set` takes an option of `mi_option_e` and a value, plain
    // integers; any delay in milliseconds is a value `PURGE_DELAY` takes ("use 0 for
    // immediate purging", `mimalloc.h`).
    unsafe { mi_option_set(PURGE_DELAY, ms) };
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
        set_purge_delay(0);
    }
}

/// The calls within [`returning_freed_memory`] under way, and the purge delay before the
/// first of them.
static AT_ONCE: Mutex<(usize, c_long)> = Mutex::new((0, 0));

/// Runs `f` with freed memory given back to the system at once, then with mimalloc's delay
/// again (unless the environment sets `MIMALLOC_PURGE_DELAY`): what was freed before is
/// given back at the start too. A loader's build reads every sample's length (a copy of
/// the lengths index) and its plan frees the epoch's order (tens of MiB for millions of
/// samples) once each rank's batches are cut; kept resident a second, they raised a
/// rank's start over 100,000 shards from +128 MiB to +186 (issue 39). Elsewhere the delay
/// serves: a `take`'s or a batch's buffers, freed and allocated again within the second,
/// are reused rather than given back and faulted in anew (a `take` of 10,000 rows by range
/// requests: half the CPU, docs/remote.md). Calls on several threads at once share the
/// setting; the last to end restores the delay.
///
/// ```
/// let sum = lodtensor_cli::returning_freed_memory(|| (0..1000u64).collect::<Vec<_>>().iter().sum::<u64>());
/// assert_eq!(sum, 499_500);
/// ```
pub fn returning_freed_memory<T>(f: impl FnOnce() -> T) -> T {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return f();
    }
    let _at_once = AtOnce::begin();
    f()
}

/// One call of [`returning_freed_memory`] under way: the purge delay 0 while any is.
struct AtOnce;

impl AtOnce {
    fn begin() -> Self {
        let mut at_once = AT_ONCE.lock().unwrap_or_else(PoisonError::into_inner);
        if at_once.0 == 0 {
            at_once.1 = purge_delay();
            set_purge_delay(0);
            // SAFETY: `mi_collect` takes a flag and touches only mimalloc's own state.
            unsafe { mi_collect(true) };
        }
        at_once.0 += 1;
        AtOnce
    }
}

impl Drop for AtOnce {
    fn drop(&mut self) {
        let mut at_once = AT_ONCE.lock().unwrap_or_else(PoisonError::into_inner);
        at_once.0 -= 1;
        if at_once.0 == 0 {
            set_purge_delay(at_once.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by each test that sets the process's purge delay.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// The right to set the process's purge delay, unless the environment sets it (then the
    /// tests have nothing to check).
    fn alone() -> Option<std::sync::MutexGuard<'static, ()>> {
        std::env::var_os("MIMALLOC_PURGE_DELAY")
            .is_none()
            .then(|| SERIAL.lock().unwrap_or_else(PoisonError::into_inner))
    }

    #[test]
    fn the_purge_delay_is_the_option_set_and_becomes_0() {
        let Some(_serial) = alone() else { return };
        assert_eq!(
            purge_delay(),
            1000,
            "mimalloc v3's default purge delay, 1000 ms"
        );
        tune_allocator();
        assert_eq!(purge_delay(), 0);
        set_purge_delay(1000);
    }

    #[test]
    fn the_purge_delay_is_0_while_any_call_returning_freed_memory_runs() {
        let Some(_serial) = alone() else { return };
        let read = purge_delay;
        let before = read();
        set_purge_delay(250);
        let (started, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                returning_freed_memory(|| {
                    started.wait();
                    release.wait();
                    read()
                })
            });
            let inner = returning_freed_memory(|| {
                started.wait();
                read()
            });
            assert_eq!(inner, 0);
            assert_eq!(read(), 0, "the other call still runs");
            release.wait();
            assert_eq!(other.join().unwrap(), 0);
        });
        assert_eq!(
            read(),
            250,
            "the delay before the first call, restored by the last"
        );
        set_purge_delay(before);
    }
}
