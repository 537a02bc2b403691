//! Reading untrusted input allocates what the input holds, not what it declares; one test
//! binary with a counting allocator, its tests one at a time so that each counts only its
//! own allocations.
//!
//! - `declared_sizes`: files that declare huge lengths, counts or dims cannot make a reader
//!   allocate more than the file holds (plus a small constant).
//! - `manifest_memory`: reading a manifest costs about its size, not a JSON tree of it.
//! - `measured_memory`: a plan by lengths without the index holds few shards' metadata at once.
//! - `plan_memory`: a packed epoch's plan keeps a few bytes a document.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

mod declared_sizes;
mod manifest_memory;
mod measured_memory;
mod plan_memory;

/// Held by each test for its whole run: the allocator's counts are the process's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Counts the bytes allocated and the peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are only
// bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for this call.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised for this call.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak number of bytes allocated above the current level while `f` runs.
pub fn peak_of(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - base
}

/// Runs `test` alone: no other test of this binary allocates meanwhile.
pub fn alone(test: impl FnOnce()) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    test();
}
