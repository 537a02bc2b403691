//! Where a batch's buffers lie, for another process to find them without a copy: in a
//! mapped file (by its identity, recorded when [`MappedDataset`](crate::MappedDataset)
//! opened it, and an offset) or in a region of shared memory the loader gathered the batch
//! into ([`SharedMemory`]).
//!
//! ```text
//! a view batch   ── its buffers are slices of ──▶ a mapped file  ─▶ Place::File { file, offset }
//! a gathered one ── written into (shared_memory) ▶ a memfd region ─▶ Place::Shared { region, offset }
//!                ── or on the heap ─────────────────────────────────▶ no place: copy it
//! ```

use std::sync::Arc;

use super::SharedMemory;
use crate::dataset::Dataset;
use crate::io::{MappedFile, offset_in};

/// Where some bytes of a [`Batch`](super::Batch) lie, as
/// [`Batch::place`](super::Batch::place) tells: a place another process can map.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// use lodtensor::loader::Place;
/// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a view");
/// match batch.values_place("x")? {
///     Some(Place::File { file, offset }) => assert!(offset < file.identity().size as usize),
///     other => panic!("a view batch lies in its file, not {other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Place<'a> {
    /// In a mapped file, at `offset` bytes from its start.
    File {
        /// The file, with its identity when it was opened.
        file: &'a MappedFile,
        /// The bytes' offset in the file.
        offset: usize,
    },
    /// In a region of shared memory, at `offset` bytes from the region's start (its
    /// header included: the buffer starts at [`SharedMemory::HEADER`]).
    Shared {
        /// The region.
        region: &'a SharedMemory,
        /// The bytes' offset in the region.
        offset: usize,
    },
}

/// How a store loaded a batch: a view of a mapping (of the mapped file it lies in, when
/// it is one), or gathered.
#[derive(Debug)]
pub(super) enum Lies {
    /// Slices of record batches as they were mapped, in this file (if a file's).
    View(Option<Arc<MappedFile>>),
    /// Copied into a buffer of its own.
    Gathered,
}

impl Lies {
    /// A view (of `files`' file its buffers lie in) if `view`, else gathered.
    pub(super) fn of(view: bool, data: &Dataset, files: &MappedFiles) -> Self {
        match view {
            true => Lies::View(files.holding(data)),
            false => Lies::Gathered,
        }
    }
}

/// The mapped files a store's record batches lie in, by address: which one a view lies in.
#[derive(Debug, Default)]
pub(super) struct MappedFiles {
    /// The files by the address of their mapping, each once.
    by_start: Vec<(usize, Arc<MappedFile>)>,
}

impl MappedFiles {
    /// The files `files` (one may come many times).
    pub(super) fn new<'f>(files: impl IntoIterator<Item = &'f Arc<MappedFile>>) -> Self {
        let mut by_start: Vec<(usize, Arc<MappedFile>)> = (files.into_iter())
            .map(|f| (f.start(), f.clone()))
            .collect();
        by_start.sort_unstable_by_key(|(start, _)| *start);
        by_start.dedup_by_key(|(start, _)| *start);
        MappedFiles { by_start }
    }

    /// The file a view's buffers lie in: the one holding its first column's values (or,
    /// with none, its first column's offsets).
    pub(super) fn holding(&self, data: &Dataset) -> Option<Arc<MappedFile>> {
        let address = first_buffer(data)?;
        let i = self
            .by_start
            .partition_point(|(start, _)| *start <= address);
        let (_, file) = self.by_start.get(i.checked_sub(1)?)?;
        file.offset_of(address, 0).map(|_| file.clone())
    }
}

/// The address of a buffer of `data` that lies where every view buffer of it lies.
fn first_buffer(data: &Dataset) -> Option<usize> {
    let tensor = data.columns().iter().find_map(|c| c.as_tensor())?;
    Some(tensor.values().as_ptr() as usize)
}

/// Where the `len` bytes at `address` lie among `file` and `region`.
pub(super) fn place_of<'a>(
    file: Option<&'a MappedFile>,
    region: Option<&'a SharedMemory>,
    address: usize,
    len: usize,
) -> Option<Place<'a>> {
    if let Some(file) = file
        && let Some(offset) = file.offset_of(address, len)
    {
        return Some(Place::File { file, offset });
    }
    let region = region?;
    let offset = offset_in(region.as_ptr() as usize, region.len(), address, len)?;
    Some(Place::Shared { region, offset })
}
