//! A shard's download lock in the cache: an exclusive `flock` on its `.lock` file, which a
//! forked child does not keep.
//!
//! `flock` belongs to the open file description, which `fork` shares: a child forked
//! while a thread of its parent downloads a shard (a DataLoader worker started during a
//! prefetch) would hold that lock for as long as it lives, since the thread that would
//! close it does not exist in the child, and then wait on it forever itself. So every lock
//! held is registered, and a handler run in the child right after `fork` closes the
//! child's copies; the parent's lock is unaffected and released as usual.

use std::fs::File;
use std::path::Path;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

use super::private::{self, How};

/// The descriptors of the locks held, `-1` in a free slot.
static HELD: [AtomicI32; SLOTS] = [const { AtomicI32::new(-1) }; SLOTS];
/// More locks held at once than the cache ever takes (downloads ahead are at most 8).
const SLOTS: usize = 128;

/// A shard's download lock, held until dropped.
#[derive(Debug)]
pub(crate) struct ShardLock {
    file: File,
    slot: Option<usize>,
}

impl ShardLock {
    /// The lock on `path` (created if missing, never through a link), waiting for its
    /// holder.
    pub(crate) fn acquire(path: &Path) -> std::io::Result<Self> {
        let file = private::open(path, How::Lock)?;
        file.lock()?;
        Ok(Self::held(file))
    }

    /// The lock on `path`, or `None` if another holds it.
    pub(crate) fn try_acquire(path: &Path) -> std::io::Result<Option<Self>> {
        let file = private::open(path, How::Lock)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self::held(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// `file`, locked, registered for the children to close.
    fn held(file: File) -> Self {
        static HANDLER: Once = Once::new();
        HANDLER.call_once(|| {
            // SAFETY: `close_in_child` is an `extern "C"` function that only loads atomics
            // and calls `close`, both async-signal-safe, as a handler run after `fork` must.
            unsafe { libc::pthread_atfork(None, None, Some(close_in_child)) };
        });
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let slot = HELD.iter().position(|s| {
            s.compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        ShardLock { file, slot }
    }
}

impl Drop for ShardLock {
    /// Unlocks (for every copy of the descriptor), then forgets the descriptor, then closes
    /// it: a child forked at any point of this holds no lock.
    fn drop(&mut self) {
        let _ = self.file.unlock();
        if let Some(slot) = self.slot {
            HELD[slot].store(-1, Ordering::Release);
        }
    }
}

/// Run in a child right after `fork`: closes its copies of the locks its parent holds.
extern "C" fn close_in_child() {
    for slot in &HELD {
        let fd = slot.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: `fd` was open in the parent when it forked (it is forgotten before it
            // is closed there), so it is this child's copy of it.
            unsafe { libc::close(fd) };
        }
    }
}
