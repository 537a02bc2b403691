//! One batch of a [`Loader`]: its columns and where it stands in its epoch.

use std::ops::Range;
use std::sync::Arc;

#[cfg(doc)]
use super::Loader;
use super::SharedMemory;
use super::mix::Blend;
use super::place::{Place, place_of};
use super::state::LoaderState;
use super::{BatchInfo, Fingerprint, Piece, Plan, Position};
use crate::dataset::Dataset;
use crate::error::ArgumentError;
use crate::error::Result;
use crate::io::MappedFile;
use crate::lod::LevelOffsets;
use crate::ops::{Padded, to_padded};
use crate::values::{DType, Values};

/// One batch: a dataset of every column for the batch's samples, and where it stands.
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::Loader;
/// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
/// let batch = loader.next_batch()?.expect("a batch");
/// assert_eq!((batch.samples(), batch.tokens(), batch.is_view()), (&[0, 1][..], 3, true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Batch {
    pub(super) data: Dataset,
    pub(super) view: bool,
    /// The mapped file a view batch lies in (`None`: gathered, or not a file's).
    pub(super) file: Option<Arc<MappedFile>>,
    /// The shared memory a gathered batch was written into.
    pub(super) shared: Option<Arc<SharedMemory>>,
    pub(super) plan: Arc<Plan>,
    /// The batch's index in the plan.
    pub(super) index: usize,
    /// Its samples' count, tokens and longest length (the plan's, or measured when the
    /// plan was made without lengths).
    pub(super) info: BatchInfo,
    /// The step the batch was read in, and the next one (`index..index + 1` unless ranks
    /// take turns).
    pub(super) steps: Range<usize>,
    pub(super) fingerprint: Fingerprint,
    /// A mixture's sources.
    pub(super) blend: Option<Arc<Blend>>,
}

impl Batch {
    /// The batch's columns.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a batch");
    /// assert_eq!(batch.data().column("x")?.elements().len(), 3);   // samples 0 and 1: 1 + 2
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(&self) -> &Dataset {
        &self.data
    }

    /// The dataset, dropping the rest.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a batch");
    /// let data = batch.into_dataset();
    /// assert_eq!(data.num_rows(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_dataset(self) -> Dataset {
        self.data
    }

    /// Whether the batch is a view into the mapping (else it was gathered, copied once).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut in_order = Loader::builder(&file).with_batch_size(2).build()?;
    /// assert!(in_order.next_batch()?.expect("rows 0..2").is_view());
    /// let mut shuffled = Loader::builder(&file).with_batch_size(5).with_shuffle(1).build()?;
    /// assert!(!shuffled.next_batch()?.expect("a permutation").is_view());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_view(&self) -> bool {
        self.view
    }

    /// The shared memory the batch was gathered into, with
    /// [`with_shared_memory`](super::LoaderBuilder::with_shared_memory) (`None`: a view of
    /// the file, or gathered on the heap). Its columns' buffers lie in it.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).with_shared_memory(true).build()?;
    /// assert!(loader.next_batch()?.expect("rows 0..2").shared_memory().is_none());   // a view
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared_memory(&self) -> Option<&SharedMemory> {
        self.shared.as_deref()
    }

    /// Where the `len` bytes at `address` (of this process) lie, if in memory another
    /// process can map: the mapped file a view batch lies in (its identity, recorded when
    /// it was opened, and the offset), or the shared memory the batch was gathered into.
    /// `None` for bytes elsewhere (a batch gathered on the heap, a compressed file's
    /// values, bytes not of this batch).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::{Loader, loader::Place};
    /// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a view");
    /// let values = batch.data().column("x")?.values();
    /// let place = batch.place(values.as_ptr() as usize, 4);
    /// assert!(matches!(place, Some(Place::File { file, .. }) if file.path() == path));
    /// assert!(batch.place(0, 4).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn place(&self, address: usize, len: usize) -> Option<Place<'_>> {
        place_of(self.file.as_deref(), self.shared.as_deref(), address, len)
    }

    /// Where the values of `column`'s elements in this batch lie ([`Batch::place`]; `None`
    /// for a side column).
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`] for a column
    /// the batch has not.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::{Loader, loader::Place};
    /// let mut loader = Loader::builder(&file).with_batch_size(5).with_shuffle(1)
    ///     .with_shared_memory(true).build()?;
    /// let gathered = loader.next_batch()?.expect("a permutation");
    /// let place = gathered.values_place("x")?;
    /// assert_eq!(matches!(place, Some(Place::Shared { .. })), cfg!(target_os = "linux"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn values_place(&self, column: &str) -> Result<Option<Place<'_>>> {
        let found = self.data.column_by_name(column)?;
        let Some(tensor) = found.as_tensor() else {
            return Ok(None);
        };
        let values = tensor.values();
        let Some(width) = values.dtype().byte_width() else {
            return Ok(None); // Booleans, packed in bits: no bytes of their own.
        };
        let width = width * values.element_size();
        let elements = tensor.elements();
        let address = values.as_ptr() as usize + elements.start * width;
        Ok(self.place(address, elements.len() * width))
    }

    /// The samples (global row numbers of the file), in batch order.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(3).build()?;
    /// loader.next_batch()?;
    /// assert_eq!(loader.next_batch()?.expect("the second").samples(), &[3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn samples(&self) -> &[usize] {
        self.plan
            .batch(self.index)
            .expect("the batch is in its plan")
    }

    fn info(&self) -> &BatchInfo {
        &self.info
    }

    /// The sum of the samples' lengths.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_token_budget(6).build()?.next_batch()?.expect("a batch");
    /// assert_eq!((batch.samples(), batch.tokens()), (&[0, 1, 2][..], 6));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tokens(&self) -> usize {
        self.info().tokens
    }

    /// The longest sample's length.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_batch_size(3).build()?.next_batch()?.expect("a batch");
    /// assert_eq!(batch.max_len(), 3);                              // samples of 1, 2, 3 elements
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_len(&self) -> usize {
        self.info().max_len
    }

    /// The batch's cost as the planner counted it ([`Plan::costs`]): the sum of `n + w·n²`
    /// over its samples of `n` tokens (a packed window: over its documents' pieces, its
    /// padding counting its length), `w` the [`Balance`](super::Balance)'s weight, 0
    /// without balance. A loader whose plans are made without lengths (lazy shards, no
    /// balance) counts the batch's tokens.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Balance, Loader};
    /// let mut loader = Loader::builder(&file).with_batch_size(2)
    ///     .with_balance(Balance::Attention { weight: 0.5 }).build()?;
    /// let batch = loader.next_batch()?.expect("a batch");
    /// let lengths: Vec<usize> = batch.samples().iter().map(|&s| s + 1).collect();   // s + 1 tokens
    /// let cost: f64 = lengths.iter().map(|&n| n as f64 + 0.5 * (n * n) as f64).sum();
    /// assert_eq!(batch.cost(), cost);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cost(&self) -> f64 {
        let planned = self.plan.infos().get(self.index);
        match self.plan.costs().get(self.index) {
            // Measured tokens differ from a plan made with lengths of 1.
            Some(&cost) if planned.is_some_and(|p| p.tokens == self.info.tokens) => cost,
            _ => self.info.tokens as f64,
        }
    }

    /// Whether this is a single sample longer than the token budget.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_token_budget(4).build()?;
    /// let sizes: Vec<(usize, bool)> = loader.by_ref()
    ///     .map(|b| b.map(|b| (b.tokens(), b.is_oversize())))
    ///     .collect::<lodtensor::Result<_>>()?;
    /// assert_eq!(sizes, [(3, false), (3, false), (4, false), (5, true)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_oversize(&self) -> bool {
        self.info().oversize
    }

    /// The share of padding were the samples padded to the longest, in `0..=1` (in a
    /// packed batch: the share of its windows' tokens that are padding).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a batch");
    /// assert_eq!(batch.padding_ratio(), 0.25);                     // 3 of 2 × 2 places hold tokens
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn padding_ratio(&self) -> f64 {
        self.info().padding_ratio()
    }

    /// This batch's position (when ranks take turns: that of the step it was read in).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let before = loader.next_position();
    /// assert_eq!(loader.next_batch()?.expect("a batch").position(), before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> Position {
        Position {
            epoch: self.plan.epoch(),
            batch: self.steps.start,
            fingerprint: self.fingerprint,
        }
    }

    /// The position after this batch: save it once the batch is trained on, restore it with
    /// [`Loader::seek`] to continue with the next batch (when ranks take turns: with the
    /// next step, the same position on every rank).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let batch = loader.next_batch()?.expect("a batch");
    /// assert_eq!(batch.next_position(), loader.next_position());
    /// assert_eq!(batch.next_position().batch, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_position(&self) -> Position {
        Position {
            batch: self.steps.end,
            ..self.position()
        }
    }

    /// The loader's state after this batch: [`Batch::next_position`], and what a loader
    /// built with other options needs to go on from it ([`Loader::restore`](super::Loader::restore)).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// let batch = loader.next_batch()?.expect("a batch");
    /// assert_eq!(batch.next_state().position(), batch.next_position());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_state(&self) -> LoaderState {
        let position = self.next_position();
        super::resume::state_at(&self.plan, position)
    }

    /// The batch's index in its epoch's [`Plan`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut rank_1 = Loader::builder(&file).with_batch_size(1).elastic_shard(1, 2).build()?;
    /// let indices: Vec<usize> = rank_1.by_ref().map(|b| b.map(|b| b.index())).collect::<lodtensor::Result<_>>()?;
    /// assert_eq!(indices, [1, 3]);                                 // its turns of batches 0..5
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether the batch is packed (its samples are windows; the loader packs,
    /// [`LoaderBuilder::with_packing`](super::LoaderBuilder::with_packing)): what
    /// `windows().is_some()` says, without making the windows' pieces.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let mut packs = Loader::builder(&file).with_batch_size(1).with_packing(Packing::new(4)).build()?;
    /// assert!(packs.next_batch()?.expect("a window").is_packed());
    /// let mut rows = Loader::builder(&file).with_batch_size(1).build()?;
    /// assert!(!rows.next_batch()?.expect("a row").is_packed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_packed(&self) -> bool {
        self.plan.windows().is_some()
    }

    /// A packed batch's windows, each the list of its pieces of documents, in batch order
    /// (`None` unless the loader packs, [`LoaderBuilder::with_packing`](super::LoaderBuilder::with_packing)).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing, Piece};
    /// let mut loader = Loader::builder(&file).with_batch_size(1).with_packing(Packing::new(4)).build()?;
    /// let windows = loader.next_batch()?.expect("a batch").windows().expect("packed");
    /// assert_eq!(windows[0][2], Piece { row: 2, first_token: 0, n_tokens: 1 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn windows(&self) -> Option<Vec<Vec<Piece>>> {
        let windows = self.plan.windows()?;
        let mut out: Vec<Vec<Piece>> = self.samples().iter().map(|&w| windows.pieces(w)).collect();
        if let Some(blend) = &self.blend {
            for p in out.iter_mut().flatten() {
                p.row = blend.source_of(p.row).1; // The row of its source.
            }
        }
        Some(out)
    }

    /// A mixture's batch ([`Mixture`](super::Mixture)): the source of every sample (of
    /// every window, when packing), in batch order; `None` for a loader of one source.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let (a, b) = (MappedDataset::open(&path)?, MappedDataset::open(&path)?);
    /// use lodtensor::loader::{Loader, Mixture};
    /// let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![1.0, 1.0]);
    /// let batch = Loader::builder(&mixture).with_batch_size(4).build()?.next_batch()?.expect("a batch");
    /// assert_eq!(batch.sources(), Some(vec![0, 1, 0, 1]));
    /// assert_eq!(batch.source_rows(), Some(vec![0, 0, 1, 1]));   // each source's rows in order
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sources(&self) -> Option<Vec<usize>> {
        let blend = self.blend.as_ref()?;
        let source = |row| blend.source_of(row).0;
        Some(match self.plan.windows() {
            Some(w) => (self.samples().iter())
                .map(|&s| source(w.pieces(s)[0].row))
                .collect(),
            None => self.samples().iter().map(|&r| source(r)).collect(),
        })
    }

    /// A mixture's batch of samples (not packed): every sample's row within its source.
    ///
    /// # Example
    /// See [`Batch::sources`].
    pub fn source_rows(&self) -> Option<Vec<usize>> {
        let blend = self.blend.as_ref()?;
        if self.plan.windows().is_some() {
            return None;
        }
        Some(
            self.samples()
                .iter()
                .map(|&r| blend.source_of(r).1)
                .collect(),
        )
    }

    /// A packed batch's boundaries of column `column`, as FlashAttention's varlen kernels
    /// take them: `int32` offsets from 0 to the batch's tokens, at every window edge and
    /// every edge of a document (or of a window's padding) inside a window; the offsets of
    /// level 1 of the packed column.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`]; [`ArgumentError::InvalidArgument`] when the batch is
    /// not packed, or has more tokens than `i32` counts.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let mut loader = Loader::builder(&file).with_batch_size(2).with_packing(Packing::new(5)).build()?;
    /// let batch = loader.next_batch()?.expect("windows 0 and 1");
    /// assert_eq!(batch.cu_seqlens("x")?, [0, 1, 3, 5, 6, 10]);  // |1 2 2|1 4|
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cu_seqlens(&self, column: &str) -> Result<Vec<i32>> {
        let tensor = self.data.column(column)?;
        if self.plan.windows().is_none() {
            return Err(not_packed("cu_seqlens", "not a packed batch"));
        }
        let packed = || not_packed("cu_seqlens", "not a packed column");
        match tensor.lod().levels().get(1).ok_or_else(packed)? {
            // Packed offsets start at 0 (the loader makes them): a copy of the buffer.
            LevelOffsets::I32(o) if o[0] == 0 => Ok(o.to_vec()),
            level => (level.to_vec().iter())
                .map(|&o| i32::try_from(o - level.get(0) as i64))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| not_packed("cu_seqlens", "more tokens than int32 counts")),
        }
    }

    /// A packed batch's position of every token within its piece of a document: 0 at
    /// every boundary of [`Batch::cu_seqlens`], then counting up.
    ///
    /// # Errors
    /// As [`Batch::cu_seqlens`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let mut loader = Loader::builder(&file).with_batch_size(1).with_packing(Packing::new(5)).build()?;
    /// let batch = loader.next_batch()?.expect("window 0");
    /// assert_eq!(batch.position_ids("x")?, [0, 0, 1, 0, 1]);    // rows 0, 1 and 2's first two
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position_ids(&self, column: &str) -> Result<Vec<i64>> {
        let cu = self.cu_seqlens(column)?;
        let mut ids = Vec::with_capacity(cu.last().map_or(0, |&n| n as usize));
        for w in cu.windows(2) {
            ids.extend(0..i64::from(w[1] - w[0]));
        }
        Ok(ids)
    }

    /// A zero-padded copy of level `level` of column `column`: the sequences of that level
    /// as rows `[rows, max_len, D…]`, with lengths and mask ([`crate::ops::to_padded`]).
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`]; as [`crate::ops::to_padded`] ([`ArgumentError::LevelOutOfBounds`]
    /// for a 0-level column, which is dense already).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let batch = Loader::builder(&file).with_batch_size(2).build()?.next_batch()?.expect("a batch");
    /// let padded = batch.to_padded("x", 0)?;
    /// assert_eq!(padded.shape, vec![2, 2]);                        // 2 samples, the longest 2
    /// assert_eq!(padded.lengths, vec![1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_padded(&self, column: &str, level: usize) -> Result<Padded> {
        let tensor = self.data.column(column)?;
        to_padded(tensor, level, &zero(tensor.dtype())?, None)
    }
}

/// The error of a packing accessor on a batch it does not fit.
fn not_packed(name: &'static str, found: &str) -> crate::error::Error {
    ArgumentError::InvalidArgument {
        op: "Batch",
        name,
        found: found.to_owned(),
        expected: "a packed batch of at most i32::MAX tokens".to_owned(),
    }
    .into()
}

/// One zero item (`false` for booleans) of `dtype`.
pub(super) fn zero(dtype: DType) -> Result<Values> {
    let data = arrow_data::ArrayData::builder(dtype.arrow_type())
        .len(1)
        .add_buffer(arrow_buffer::Buffer::from_vec(vec![0u64]))
        .build()?;
    Values::try_new(arrow_array::make_array(data), vec![])
}
