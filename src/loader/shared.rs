//! Shared memory that gathered batches are written into, for another process to map.
//!
//! With [`LoaderBuilder::with_shared_memory`](super::LoaderBuilder::with_shared_memory)
//! (Linux), a gathered batch lives in a region of a `memfd` instead of the heap: another
//! process (a DataLoader's main process) maps the same pages by `/proc/PID/fd/FD` and reads
//! the batch without a copy. A region is laid out as
//!
//! ```text
//! | lend flag (1 byte) | 63 bytes unused | the gathered buffer (64-byte aligned parts) … |
//! ```
//!
//! The flag says another process may still read the region: [`SharedMemory::lend`] sets
//! it, the borrowing process clears it when done, and the loader writes a region again
//! only when the flag is clear and no batch of this process holds it.
//!
//! That protocol is [`RegionPool`]'s, which the loader's gatherer and the binding's
//! DataLoader workers (arrays a collate function made, copied into shared memory) both
//! take their regions from:
//!
//! ```text
//!  take ──▶ held (an Arc beyond the pool's) ──lend──▶ lent (flag 1) ──borrower writes 0──┐
//!   ▲          │ dropped, never lent                      │ borrower dies: lent for good │
//!   └── free ◀─┴──────────────────────────────────────────┴──────────────────────────────┘
//!  a fork: the child's pool drops the parent's regions (it shares their pages) and makes its own
//! ```

use std::ffi::CStr;
use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use super::LoaderBuilder;

/// The bytes before a region's buffer: its lend flag, then padding to 64.
pub(super) const HEADER: usize = 64;

impl LoaderBuilder<'_> {
    /// Gathered batches written into shared memory (a `memfd`, Linux; elsewhere, or when
    /// the system refuses, the heap as without it), which another process can map and read
    /// without a copy ([`Batch::shared_memory`](super::Batch::shared_memory)). Up to 16
    /// regions are reused; with every one held or lent, a batch is gathered on the heap.
    /// A process forked from the loader's shares its regions' pages: the loader there makes
    /// regions of its own. Views of the file stay views. Default: off.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(5).with_shuffle(1)
    ///     .with_shared_memory(true).build()?;
    /// let batch = loader.next_batch()?.expect("a gathered batch");
    /// assert_eq!(batch.shared_memory().is_some(), cfg!(target_os = "linux"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_shared_memory(mut self, shared: bool) -> Self {
        self.shared_memory = shared;
        self
    }
}

/// A region of shared memory (a `memfd`) holding gathered batches, as
/// [`Batch::shared_memory`](super::Batch::shared_memory) returns it.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let mut loader = Loader::builder(&file).with_batch_size(5).with_shuffle(1)
///     .with_shared_memory(true).build()?;
/// let batch = loader.next_batch()?.expect("a gathered batch");
/// if let Some(region) = batch.shared_memory() {       // Linux
///     let values = batch.data().column("x")?.values().as_ptr() as usize;
///     assert!((region.as_ptr() as usize..region.as_ptr() as usize + region.len()).contains(&values));
///     region.lend();                                  // another process reads it now
///     assert!(region.is_lent());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SharedMemory {
    map: MmapRaw,
    /// The `memfd`, open as long as the region lives: its descriptor names it to others.
    _file: File,
    fd: i32,
    inode: u64,
    /// The process that made it: a process forked since shares its pages, so must not
    /// write it (the loader there drops it and makes its own).
    pid: u32,
}

impl SharedMemory {
    /// A region of at least `len` bytes after its header, or `None` where shared memory
    /// cannot be made (not Linux, or the system refused).
    pub(super) fn new(len: usize, name: &CStr) -> Option<SharedMemory> {
        let (file, fd, inode) = memfd(name)?;
        file.set_len(u64::try_from(HEADER + len).ok()?).ok()?;
        let map = MmapOptions::new().populate().map_raw(&file).ok()?;
        Some(SharedMemory {
            map,
            _file: file,
            fd,
            inode,
            pid: std::process::id(),
        })
    }

    /// The file descriptor of the `memfd` in this process (`/proc/PID/fd/FD` opens it).
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// The inode of the `memfd`: with the process and the descriptor, it tells this region
    /// from one that had the same descriptor number before.
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The region's first byte in this process (the lend flag); the buffer starts 64 bytes on.
    pub fn as_ptr(&self) -> *const u8 {
        self.map.as_ptr()
    }

    /// The region's size in bytes, header included.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The bytes before the buffer: the lend flag (the first byte), then padding to 64.
    pub const HEADER: usize = HEADER;

    /// The offset of the lend flag in a region: a byte, not 0 while another process may
    /// read the region ([`SharedMemory::lend`]); that process writes 0 there when done.
    pub const LEND_FLAG: usize = 0;

    /// The size of a region holding `len` bytes after its header, as the loader makes
    /// them: rounded up to an eighth of a power of two (at least 64 KiB), so that a region
    /// is reused by batches a little larger.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::SharedMemory;
    /// assert_eq!(SharedMemory::region_size(0), 0);             // no bytes: the header only
    /// assert_eq!(SharedMemory::region_size(1), 1 << 16);
    /// assert_eq!(SharedMemory::region_size(1 << 20), 1 << 20);
    /// assert_eq!(SharedMemory::region_size((1 << 20) + 1), (1 << 20) + (1 << 18));
    /// ```
    pub fn region_size(len: usize) -> usize {
        let bits = len.saturating_sub(1).checked_ilog2().unwrap_or(0);
        let step = (1usize << 16).max(1 << bits.saturating_sub(2));
        len.div_ceil(step) * step
    }

    /// The process that made the region (with [`SharedMemory::fd`], another process opens
    /// it as `/proc/PID/fd/FD`).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(5).with_shuffle(1)
    ///     .with_shared_memory(true).build()?;
    /// let batch = loader.next_batch()?.expect("a gathered batch");
    /// if let Some(region) = batch.shared_memory() {       // Linux
    ///     assert_eq!(region.pid(), std::process::id());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the region is empty (never: it has a header).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// Marks the region lent: the loader does not write it again until the flag, its first
    /// byte, is cleared (by the process it was lent to, when done reading).
    pub fn lend(&self) {
        self.flag().store(1, Ordering::Release);
    }

    /// Whether the region is lent (its first byte is not 0).
    pub fn is_lent(&self) -> bool {
        self.flag().load(Ordering::Acquire) != 0
    }

    fn flag(&self) -> &AtomicU8 {
        // SAFETY: the mapping is at least HEADER bytes, page-aligned, and lives as long as
        // `self`; this process reads and writes byte 0 only through this atomic (the
        // buffer, which batches read, starts at HEADER), and other processes change it
        // only as a whole byte.
        unsafe { AtomicU8::from_ptr(self.map.as_mut_ptr()) }
    }

    /// The region's first byte in this process, to write through: a region the caller
    /// took from a [`RegionPool`] (no batch holds it, no other process reads it) is the
    /// caller's to fill (its buffer, [`SharedMemory::HEADER`] bytes on) until it lends it.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::{RegionPool, SharedMemory};
    /// let mut pool = RegionPool::new(4);
    /// if let Some(region) = pool.take(100) {              // Linux
    ///     // SAFETY: just taken: nothing else reads or writes its buffer.
    ///     unsafe { region.as_mut_ptr().add(SharedMemory::HEADER).write(7) };
    ///     assert_eq!(unsafe { *region.as_ptr().add(SharedMemory::HEADER) }, 7);
    /// }
    /// ```
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The buffer after the header, to fill. `&mut self`: no batch of this process holds
    /// the region (the caller checked it is not lent either).
    pub(super) fn buffer_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping holds `len()` bytes from its start, so `len() - HEADER` from
        // HEADER; `&mut self` means no other reference into the region exists in this
        // process, and a region not lent is read by no other process.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.map.as_mut_ptr().add(HEADER),
                self.map.len() - HEADER,
            )
        }
    }
}

/// Regions of shared memory reused under the lend protocol (the module's docs): a region
/// is taken again only when no one but the pool holds it (no batch, no array of this
/// process) and its lend flag is clear. At most `slots` regions are kept; with every one
/// busy, [`RegionPool::take`] says `None` and the caller uses the heap. After a fork the
/// pool of the child forgets the parent's regions (their pages are shared: writing them
/// would change what the parent's borrowers read) and makes its own.
///
/// # Example
/// ```
/// use lodtensor::loader::RegionPool;
/// let mut pool = RegionPool::new(2);
/// if let Some(region) = pool.take(1000) {             // Linux
///     region.lend();                                   // another process reads it now
///     let other = pool.take(1000).expect("a second region");
///     let inode = other.inode();
///     assert_ne!(inode, region.inode());               // the first is lent: busy
///     drop(other);                                     // held no more, never lent: free
///     assert_eq!(pool.take(10).expect("the free one").inode(), inode);
///     assert_eq!(pool.made(), 2);
/// }
/// ```
#[derive(Debug)]
pub struct RegionPool {
    regions: Vec<Arc<SharedMemory>>,
    slots: usize,
    made: u64,
    name: &'static CStr,
}

impl RegionPool {
    /// An empty pool keeping at most `slots` regions, named `lodtensor-gather` (the
    /// loader's).
    pub fn new(slots: usize) -> Self {
        RegionPool {
            regions: Vec::new(),
            slots,
            made: 0,
            name: c"lodtensor-gather",
        }
    }

    /// The name of the pool's `memfd`s (`/proc/PID/maps` shows `/memfd:NAME`), which
    /// tells one pool's regions from another's.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::RegionPool;
    /// let mut pool = RegionPool::new(4).with_name(c"lodtensor-batch");
    /// if let Some(region) = pool.take(10) {                // Linux
    ///     let maps = std::fs::read_to_string("/proc/self/maps")?;
    ///     let address = region.as_ptr() as usize;
    ///     let line = maps.lines().find(|l| {
    ///         let (lo, hi) = l.split(' ').next().unwrap().split_once('-').unwrap();
    ///         usize::from_str_radix(lo, 16).unwrap() == address
    ///     });
    ///     assert!(line.expect("mapped").contains("/memfd:lodtensor-batch"));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_name(mut self, name: &'static CStr) -> Self {
        self.name = name;
        self
    }

    /// A free region of at least `len` bytes after its header: one of the pool's (the
    /// first that fits), or a new one of [`SharedMemory::region_size`]`(len)` (replacing a
    /// free one too small when every slot is taken). The pool keeps it; it is busy while
    /// the returned `Arc` (or a clone) lives or while it is lent. `None` when every region
    /// is busy, or shared memory cannot be made (not Linux, or the system refused).
    pub fn take(&mut self, len: usize) -> Option<Arc<SharedMemory>> {
        let region = self.take_unheld(len)?;
        self.regions.push(region.clone());
        Some(region)
    }

    /// As [`RegionPool::take`], but the pool does not keep the region until
    /// [`RegionPool::keep`]: the caller is its only holder (`Arc::get_mut` succeeds).
    pub(super) fn take_unheld(&mut self, len: usize) -> Option<Arc<SharedMemory>> {
        let pid = std::process::id();
        self.regions.retain(|r| r.pid() == pid);
        let free = |r: &Arc<SharedMemory>| Arc::strong_count(r) == 1 && !r.is_lent();
        let fits = (self.regions.iter()).position(|r| free(r) && r.len() - HEADER >= len);
        if let Some(i) = fits {
            return Some(self.regions.swap_remove(i));
        }
        if self.regions.len() >= self.slots {
            // Every region is busy, or too small: replace a free one by a larger one.
            let small = self.regions.iter().position(free)?;
            self.regions.swap_remove(small);
        }
        let region = SharedMemory::new(SharedMemory::region_size(len), self.name)?;
        self.made += 1;
        Some(Arc::new(region))
    }

    /// Keeps `region` (taken by [`RegionPool::take_unheld`]) for reuse.
    pub(super) fn keep(&mut self, region: Arc<SharedMemory>) {
        self.regions.push(region);
    }

    /// The regions made so far (each a `memfd` and a mapping).
    pub fn made(&self) -> u64 {
        self.made
    }

    /// The regions kept, busy or free.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether the pool keeps no region.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}

/// A new `memfd` named `name` (as `/proc/PID/maps` shows it), its descriptor and its inode.
#[cfg(target_os = "linux")]
fn memfd(name: &CStr) -> Option<(File, i32, u64)> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    // SAFETY: the name is a NUL-terminated string; the call returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor memfd_create just returned is open and owned by no one else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let inode = file.metadata().ok()?.ino();
    Some((file, fd, inode))
}

#[cfg(not(target_os = "linux"))]
fn memfd(_name: &CStr) -> Option<(File, i32, u64)> {
    None
}
