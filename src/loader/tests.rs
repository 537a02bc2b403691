//! The loader's unit tests: booleans and 32-bit offsets gathered, zero items of every dtype,
//! gathering into shared memory.

use super::batch::zero;
use super::*;

use crate::dataset::{Column, Dataset};
use crate::io::ipc_reader::MappedDataset;
use crate::io::ipc_writer::{DatasetWriter, WriteOptions};
use crate::lod::{Lod, OffsetWidth};
use crate::tensor::LodTensor;
use crate::values::{DType, Values};
use arrow_array::BooleanArray;

/// A file of five samples in five record batches: booleans under 32-bit offsets and
/// 3-item elements (the bit and `i32` paths of gathering).
fn boolean_file(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("b.arrow");
    let lengths = vec![vec![1, 3, 0, 2, 1], vec![2, 1, 1, 3, 2, 1, 1]];
    let items: Vec<bool> = (0..11 * 3).map(|i| i % 3 == 0 || i % 5 == 0).collect();
    let t = LodTensor::try_new(
        Lod::try_from_lengths(&lengths).unwrap(),
        Values::try_new(Arc::new(BooleanArray::from(items)), vec![3]).unwrap(),
    )
    .unwrap();
    let ds = Dataset::try_new(vec![Column::new("flags", t)]).unwrap();
    let options = WriteOptions::default()
        .with_offset_width(OffsetWidth::I32)
        .with_batch_bytes(1);
    let mut w = DatasetWriter::create(&path, options).unwrap();
    for row in 0..5 {
        w.write(&ds.slice_rows(row..row + 1).unwrap()).unwrap();
    }
    w.finish().unwrap();
    path
}

#[test]
fn gathers_booleans_and_i32_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(5)
        .with_shuffle(1)
        .build()
        .unwrap();
    let b = loader.next_batch().unwrap().unwrap();
    assert!(!b.is_view());
    let t = b.data().column("flags").unwrap();
    assert!(
        t.lod()
            .levels()
            .iter()
            .all(|l| l.width() == OffsetWidth::I32)
    );
    for (k, &s) in b.samples().iter().enumerate() {
        assert_eq!(
            b.data().slice_rows(k..k + 1).unwrap(),
            file.sample(s).unwrap()
        );
    }
}

#[test]
fn zero_pads_every_dtype() {
    for dtype in DType::ALL {
        let z = zero(dtype).unwrap();
        assert_eq!((z.dtype(), z.num_elements()), (dtype, 1));
    }
}

/// Every buffer of `batch`'s columns, as byte ranges of this process.
fn buffer_ranges(batch: &Batch) -> Vec<std::ops::Range<usize>> {
    let data = batch.data().column("flags").unwrap().to_arrow();
    let mut ranges = Vec::new();
    let mut stack = vec![data.to_data()];
    while let Some(d) = stack.pop() {
        for b in d.buffers() {
            ranges.push(b.as_ptr() as usize..b.as_ptr() as usize + b.len());
        }
        stack.extend(d.child_data().iter().cloned());
    }
    ranges
}

#[cfg(target_os = "linux")]
#[test]
fn shared_memory_batches_equal_heap_ones_and_lie_in_their_region() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let build = |shared| {
        Loader::builder(&file)
            .with_batch_size(2)
            .with_shuffle(3)
            .with_shared_memory(shared)
            .build()
            .unwrap()
    };
    let (mut heap, mut shared) = (build(false), build(true));
    for _ in 0..6 {
        let (a, b) = (heap.next_batch().unwrap(), shared.next_batch().unwrap());
        let (Some(a), Some(b)) = (a, b) else {
            assert!(heap.next_batch().unwrap().is_some() == shared.next_batch().unwrap().is_some());
            continue;
        };
        assert_eq!(a.data(), b.data());
        assert!(a.shared_memory().is_none());
        if b.is_view() {
            assert!(b.shared_memory().is_none());
            continue;
        }
        let region = b
            .shared_memory()
            .expect("a gathered batch in shared memory");
        let inside = region.as_ptr() as usize + super::shared::HEADER
            ..region.as_ptr() as usize + region.len();
        for r in buffer_ranges(&b) {
            assert!(
                inside.start <= r.start && r.end <= inside.end,
                "{r:?} outside {inside:?}"
            );
        }
    }
}

/// The lend flag as another process clears it: through a mapping of its own.
#[cfg(target_os = "linux")]
fn give_back(region: (i32, u64)) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{}", region.0))
        .unwrap();
    // SAFETY: a mapping of the memfd's first page, written only at byte 0 as the borrower does.
    let mut map = unsafe { memmap2::MmapOptions::new().len(64).map_mut(&f).unwrap() };
    map[0] = 0;
}

#[cfg(target_os = "linux")]
#[test]
fn a_region_lent_or_held_is_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let mut loader = Loader::builder(&file)
        .with_batch_size(2)
        .with_shuffle(3)
        .with_shared_memory(true)
        .build()
        .unwrap();
    let id = |b: &Batch| b.shared_memory().map(|r| (r.fd(), r.inode()));
    let mut next = || loop {
        if let Some(b) = loader.next_batch().unwrap()
            && !b.is_view()
        {
            return b;
        }
    };
    let lent = next();
    lent.shared_memory().unwrap().lend();
    let lent_id = id(&lent).unwrap();
    drop(lent);
    let kept = next();
    assert_ne!(id(&kept), Some(lent_id)); // lent: not written again
    for _ in 0..20 {
        let b = next();
        assert!(id(&b) != Some(lent_id) && id(&b) != id(&kept));
    }
    give_back(lent_id);
    // Given back and dropped, it is written again (before a new region is made); with
    // every region held, a batch is gathered on the heap, and still right.
    let held: Vec<Batch> = (0..super::gather::REGION_SLOTS).map(|_| next()).collect();
    assert!(held.iter().any(|b| id(b) == Some(lent_id)));
    assert!(held.iter().any(|b| b.shared_memory().is_none()));
    for b in &held {
        for (k, &s) in b.samples().iter().enumerate() {
            assert_eq!(
                b.data().slice_rows(k..k + 1).unwrap(),
                file.sample(s).unwrap()
            );
        }
    }
}

/// A step of the region protocol's model test.
#[cfg(target_os = "linux")]
#[derive(Clone, Debug)]
enum Step {
    /// The loader's next gathered batch, held.
    Next,
    /// A held batch dropped (the `n`th, modulo).
    Drop(usize),
    /// A held batch's region lent to another process.
    Lend(usize),
    /// A lent region given back by the borrower (through a mapping of its own).
    GiveBack(usize),
    /// A borrower dies: the region it holds is never given back.
    PeerDies(usize),
    /// The process forks: the child sees the lent regions lent, gathers into regions of
    /// its own (never the parent's), and gives back the `n`th region lent (modulo), as a
    /// borrower may (the pages are shared).
    Fork(usize),
}

#[cfg(target_os = "linux")]
fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => Just(Step::Next),
        2 => any::<usize>().prop_map(Step::Drop),
        2 => any::<usize>().prop_map(Step::Lend),
        2 => any::<usize>().prop_map(Step::GiveBack),
        1 => any::<usize>().prop_map(Step::PeerDies),
        1 => any::<usize>().prop_map(Step::Fork),
    ]
}

/// The model: which regions (by `(fd, inode)`) batches hold, which are lent (and whether
/// their borrower lives), which the loader has made.
#[cfg(target_os = "linux")]
#[derive(Default)]
struct Regions {
    held: Vec<Batch>,
    lent: std::collections::HashMap<(i32, u64), bool>,
    made: std::collections::HashSet<(i32, u64)>,
}

#[cfg(target_os = "linux")]
impl Regions {
    fn id(b: &Batch) -> Option<(i32, u64)> {
        b.shared_memory().map(|r| (r.fd(), r.inode()))
    }

    /// The regions no batch holds and no borrower reads.
    fn free(&self) -> Vec<(i32, u64)> {
        let busy: Vec<_> = self.held.iter().filter_map(Self::id).collect();
        (self.made.iter().copied())
            .filter(|r| !busy.contains(r) && !self.lent.contains_key(r))
            .collect()
    }

    /// Checks a new gathered batch against the model, then holds it.
    fn next(&mut self, b: Batch) {
        let free = self.free();
        match Self::id(&b) {
            Some(r) => {
                // Never a region held or lent; a free one reused before one is made.
                assert!(!self.lent.contains_key(&r), "{r:?} is lent");
                assert!(
                    !self.held.iter().any(|h| Self::id(h) == Some(r)),
                    "{r:?} is held"
                );
                assert!(
                    free.is_empty() || free.contains(&r),
                    "{r:?} made, {free:?} free"
                );
                self.made.insert(r);
            }
            // On the heap only when every region is busy.
            None => assert!(free.is_empty() && self.made.len() == super::gather::REGION_SLOTS),
        }
        assert!(self.made.len() <= super::gather::REGION_SLOTS);
        self.held.push(b);
    }

    /// In a forked child: the held batches' regions lent as the model says, the loader's
    /// batches right and gathered into regions of the child's own, and `to_give_back` (a
    /// region lent to a live borrower) given back through the child's
    /// mapping.
    fn check_child(
        &self,
        loader: &mut Loader,
        file: &MappedDataset,
        to_give_back: Option<(i32, u64)>,
    ) -> bool {
        let lent_as_modelled = (self.held.iter())
            .filter_map(|b| b.shared_memory().map(|r| (r, Self::id(b))))
            .all(|(r, id)| r.is_lent() == id.is_some_and(|id| self.lent.contains_key(&id)));
        // Before gathering: the child's pool closes the parent's descriptors it inherited,
        // and its new memfds take their numbers.
        if let Some(r) = to_give_back {
            give_back(r);
        }
        let pid = std::process::id();
        let mut mine = Vec::new();
        for _ in 0..4 * (super::gather::REGION_SLOTS + 1) {
            let b = match loader.next_batch() {
                Ok(Some(b)) => b,
                Ok(None) => continue, // the end of an epoch
                Err(_) => return false,
            };
            let rows_right = (b.samples().iter().enumerate())
                .all(|(k, &s)| b.data().slice_rows(k..k + 1).ok() == file.sample(s).ok());
            let own = b.shared_memory().is_none_or(|r| {
                r.pid() == pid && !(self.made.iter()).any(|&(_, ino)| ino == r.inode())
            });
            if !(rows_right && own) {
                return false;
            }
            mine.push(b);
        }
        lent_as_modelled && mine.iter().any(|b| b.shared_memory().is_some())
    }
}

/// Runs `check` in a forked child, which leaves by `_exit` (never returning into the test
/// harness), and says whether it returned true. A child still running after a minute (a
/// lock some other thread held at the fork) is killed and counts as false: a guard
/// against a hang, not a timing assert.
#[cfg(target_os = "linux")]
pub(super) fn in_child(check: impl FnOnce() -> bool) -> bool {
    use std::time::{Duration, Instant};
    // SAFETY: the child runs `check` (memory, memfds and mappings; glibc's malloc is
    // usable after fork) and then `_exit`s, never returning into this process's code.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)).unwrap_or(false);
        // SAFETY: ends the child at once, running none of the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid place to write.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if Instant::now() > deadline {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(target_os = "linux")]
proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// The region protocol against a model: a region held by a batch or lent is never
    /// written (every held batch keeps the file's rows), a free one is reused before a new
    /// one is made, at most `REGION_SLOTS` are made, and with every one busy (held, or lent
    /// to a borrower alive or dead) a batch is gathered on the heap. A forked child sees
    /// the flags the parent set, writes none of the parent's regions (the parent's batches
    /// keep their rows while the child gathers), and a flag it clears frees the region
    /// for the parent.
    #[test]
    fn regions_follow_the_lend_protocol(steps in proptest::collection::vec(step(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let file = MappedDataset::open(boolean_file(&dir)).unwrap();
        let mut loader = Loader::builder(&file).with_batch_size(2).with_shuffle(3)
            .with_shared_memory(true).build().unwrap();
        let mut model = Regions::default();
        for step in steps {
            let n = model.held.len();
            let lent_alive: Vec<_> = (model.lent.iter()).filter(|(_, alive)| **alive).map(|(r, _)| *r).collect();
            match step {
                Step::Next => loop {
                    if let Some(b) = loader.next_batch().unwrap() && !b.is_view() {
                        model.next(b);
                        break;
                    }
                },
                Step::Drop(i) if n > 0 => drop(model.held.swap_remove(i % n)),
                Step::Lend(i) if n > 0 => {
                    if let Some(region) = model.held[i % n].shared_memory() {
                        region.lend();
                        model.lent.insert((region.fd(), region.inode()), true);
                    }
                }
                Step::GiveBack(i) if !lent_alive.is_empty() => {
                    let r = lent_alive[i % lent_alive.len()];
                    give_back(r);
                    model.lent.remove(&r);
                }
                Step::PeerDies(i) if !lent_alive.is_empty() => {
                    model.lent.insert(lent_alive[i % lent_alive.len()], false);
                }
                Step::Fork(i) => {
                    let give = (!lent_alive.is_empty()).then(|| lent_alive[i % lent_alive.len()]);
                    let ok = in_child(|| model.check_child(&mut loader, &file, give));
                    proptest::prop_assert!(ok, "the forked child's checks failed");
                    if let Some(r) = give {
                        model.lent.remove(&r); // given back by the child: free for the parent
                    }
                }
                _ => {}
            }
            for b in &model.held {
                for (k, &s) in b.samples().iter().enumerate() {
                    proptest::prop_assert_eq!(b.data().slice_rows(k..k + 1).unwrap(), file.sample(s).unwrap());
                }
            }
        }
    }
}

/// A fork while a prefetch thread gathers into shared memory: the child (which has no
/// such thread) gathers with a loader of its own into regions of its own and exits
/// cleanly; the parent's prefetch goes on and every batch keeps the file's rows.
#[cfg(target_os = "linux")]
#[test]
fn a_fork_while_a_prefetch_thread_gathers_kills_neither_process() {
    let dir = tempfile::tempdir().unwrap();
    let file = MappedDataset::open(boolean_file(&dir)).unwrap();
    let build = || {
        Loader::builder(&file)
            .with_batch_size(2)
            .with_shuffle(3)
            .with_shared_memory(true)
            .build()
            .unwrap()
    };
    let mut prefetch = build().prefetch(2);
    let first = prefetch.next().unwrap().unwrap();
    let right = |b: &Batch| {
        (b.samples().iter().enumerate())
            .all(|(k, &s)| b.data().slice_rows(k..k + 1).ok() == file.sample(s).ok())
    };
    let parent = std::process::id();
    let child_ok = in_child(|| {
        let mut loader = build();
        let mut held = Vec::new();
        while let Ok(Some(b)) = loader.next_batch() {
            let own = b.shared_memory().is_none_or(|r| r.pid() != parent);
            if !(own && right(&b)) {
                return false;
            }
            held.push(b);
        }
        right(&first) && !held.is_empty()
    });
    assert!(child_ok, "the forked child's checks failed");
    assert!(right(&first));
    for b in prefetch {
        assert!(right(&b.unwrap()));
    }
}
