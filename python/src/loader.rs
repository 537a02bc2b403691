//! `Loader`: the crate's loader behind a Python iterator, with prefetching on a Rust thread
//! and torch-style `state_dict` / `load_state_dict`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use lodtensor::loader::LoaderState;
use lodtensor::loader::{LoaderSource, Prefetch};
use lodtensor::{ArgumentError, Error, UnusableError};
use lodtensor_cli::returning_freed_memory;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::array::{rebased_offsets, values_view};
use crate::batch::Batch;
use crate::deprecated;
use crate::error::IntoPy;
use crate::loader_options::Options;
use crate::mix::Recipe;

/// What a loader reads, owned: kept to build the loader again in a forked child.
#[derive(Clone)]
pub enum Source {
    /// One file.
    File(Arc<lodtensor::MappedDataset>),
    /// A sharded dataset.
    Shards(Arc<lodtensor::shards::ShardedDataset>),
    /// Several of those, drawn from at set proportions (`lt.mix`).
    Mixture(Arc<Recipe>),
}

impl Source {
    /// `f` of the crate's view of the source.
    fn with<R>(&self, f: impl FnOnce(LoaderSource<'_>) -> PyResult<R>) -> PyResult<R> {
        match self {
            Source::File(file) => f(LoaderSource::File(file)),
            Source::Shards(data) => f(LoaderSource::Shards(data)),
            Source::Mixture(recipe) => {
                let sources = (recipe.sources.iter())
                    .map(|s| match s {
                        Source::File(file) => LoaderSource::File(file),
                        Source::Shards(data) => LoaderSource::Shards(data),
                        Source::Mixture(_) => unreachable!("lt.mix takes datasets only"),
                    })
                    .collect();
                let mixture = recipe.mixture(sources)?;
                f(LoaderSource::Mixture(&mixture))
            }
        }
    }

    /// The rows of the source (of every source of a mixture).
    pub fn num_rows(&self) -> usize {
        match self {
            Source::File(file) => file.num_rows(),
            Source::Shards(data) => data.num_rows(),
            Source::Mixture(recipe) => recipe.sources.iter().map(Source::num_rows).sum(),
        }
    }
}

/// Where the crate's loader is: on this thread, or on a prefetch thread.
enum State {
    Idle(Box<lodtensor::Loader>),
    /// A prefetch thread, and the id of the process that started it: after a `fork` the
    /// child has the `Prefetch` (its queue, the thread's handle) but not the thread.
    Running(Prefetch, u32),
    /// A prefetch thread panicked; the loader is gone.
    Broken,
}

/// The loader and what the Python side has been handed.
struct Inner {
    state: State,
    /// Position of the next batch handed to Python (a prefetch thread may be ahead).
    next: LoaderState,
    depth: usize,
    /// Batches in an epoch, for `len()` while a prefetch thread holds the loader.
    len: Option<(u64, usize)>,
    /// The source and options, to build the loader again in a forked child.
    recipe: (Source, Options),
}

impl Drop for Inner {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Broken) {
            // Dropping a `Prefetch` joins its thread: not in a forked child, where the
            // thread does not exist. Its queue and handle are leaked there.
            State::Running(prefetch, pid) if pid != std::process::id() => {
                std::mem::forget(prefetch)
            }
            // The thread may be making a batch that waits for the GIL (a Python credentials
            // provider, a server in this process): joined with the GIL released (a `Loader`
            // is dropped holding it), else neither ever ends.
            State::Running(prefetch, _) => {
                let mut prefetch = Some(prefetch);
                let _ = Python::try_attach(|py| py.detach(|| drop(prefetch.take())));
                drop(prefetch); // the interpreter is shutting down: joined as it is
            }
            State::Idle(_) | State::Broken => {}
        }
    }
}

impl Inner {
    /// Whether a prefetch thread runs and was started by another process: this is a
    /// child forked after it started.
    fn forked(&self) -> bool {
        matches!(self.state, State::Running(_, pid) if pid != std::process::id())
    }

    /// In a child forked while a prefetch thread ran: the loader built again from its
    /// recipe, at the position of the next batch this process hands out (what the thread
    /// read ahead is dropped, never handed out). Nothing otherwise.
    fn rebuild_after_fork(&mut self) -> PyResult<()> {
        if !self.forked() {
            return Ok(());
        }
        // The thread's handle may not be joined here (see `Drop`): leak it with its queue.
        std::mem::forget(std::mem::replace(&mut self.state, State::Broken));
        let (source, options) = self.recipe.clone();
        let mut loader = source.with(|s| options.build(s))?;
        loader.restore(&self.next).py_err()?;
        self.state = State::Idle(Box::new(loader));
        Ok(())
    }

    /// The loader on this thread, stopping a prefetch thread first.
    fn idle(&mut self) -> lodtensor::Result<&mut lodtensor::Loader> {
        if let State::Running(..) = self.state {
            let State::Running(p, _) = std::mem::replace(&mut self.state, State::Broken) else {
                unreachable!("matched above")
            };
            self.state = State::Idle(Box::new(p.into_loader()?));
        }
        match &mut self.state {
            State::Idle(loader) => Ok(loader),
            _ => Err(Error::from(UnusableError::PrefetchPanicked)),
        }
    }

    fn next(&mut self) -> lodtensor::Result<Option<lodtensor::Batch>> {
        if self.depth == 0 {
            let first = self.next.position().batch == 0;
            let loader = self.idle()?;
            // An epoch's first batch makes its plan.
            let batch = match first {
                true => returning_freed_memory(|| loader.next_batch())?,
                false => loader.next_batch()?,
            };
            self.next = loader.state();
            return Ok(batch);
        }
        if let State::Idle(_) = self.state {
            self.len = Some((self.next.position().epoch, self.epoch_len()?));
            let State::Idle(mut loader) = std::mem::replace(&mut self.state, State::Broken) else {
                unreachable!("matched above")
            };
            // The loader may have read ahead of what Python was handed (the epoch's plan
            // made here, not on the prefetch thread).
            returning_freed_memory(|| loader.restore(&self.next))?;
            let pid = std::process::id();
            self.state = State::Running((*loader).prefetch(self.depth), pid);
        }
        let State::Running(p, _) = &mut self.state else {
            return Err(Error::from(UnusableError::PrefetchPanicked));
        };
        match p.next() {
            Some(Ok(batch)) => {
                self.next = batch.next_state();
                Ok(Some(batch))
            }
            Some(Err(e)) => {
                self.idle()?;
                Err(e)
            }
            None => {
                self.next = self.idle()?.state();
                Ok(None)
            }
        }
    }

    /// The next batch of epoch `epoch`: `None` at its end, and once the loader has moved on
    /// to another epoch (so that every iterator over `epoch` ends with it).
    fn next_of(&mut self, epoch: u64) -> lodtensor::Result<Option<lodtensor::Batch>> {
        if self.next.position().epoch != epoch {
            return Ok(None);
        }
        self.next()
    }

    /// The next batch of epoch `epoch` (as [`Inner::next_of`]) when it is a view made with
    /// no work but slicing (no prefetch thread, the plan made, consecutive rows of one record
    /// batch): cheaper to make with the GIL held than to release and re-take it. `None`
    /// otherwise.
    fn next_view(&mut self, epoch: u64) -> Option<lodtensor::Result<Option<lodtensor::Batch>>> {
        if self.next.position().epoch != epoch {
            return Some(Ok(None));
        }
        match &mut self.state {
            State::Idle(loader) if self.depth == 0 && loader.next_is_view() => {
                let batch = loader.next_batch();
                self.next = loader.state();
                Some(batch)
            }
            _ => None,
        }
    }

    fn epoch_len(&mut self) -> lodtensor::Result<usize> {
        let epoch = self.next.position().epoch;
        match (&self.state, self.len) {
            (State::Running(..), Some((e, n))) if e == epoch => Ok(n),
            _ => {
                let loader = self.idle()?;
                Ok(returning_freed_memory(|| loader.num_batches(epoch)))
            }
        }
    }

    fn restore(&mut self, state: LoaderState) -> lodtensor::Result<()> {
        let loader = self.idle()?;
        returning_freed_memory(|| loader.restore(&state))?;
        self.next = loader.state();
        Ok(())
    }
}

/// Training batches over a dataset file or a sharded dataset, made by `ds.loader(**options)`:
/// the same batches as the Rust `Loader` with the same options, in the same order.
///
/// `iter(loader)` (a `for` loop) iterates the rest of the current epoch: the iterator ends
/// with the epoch, then keeps raising `StopIteration`, and the loader is at the start of the
/// next epoch for the next `iter(loader)`. Iterators of one epoch share its batches (threads
/// each running `for b in loader` get each batch once). `len(loader)` is the number of
/// batches of the current epoch. A child forked while the prefetch thread runs builds its
/// loader again on its first call and goes on from its position (the read-ahead dropped).
///
/// The options, all keywords: `batch_size=None` or `token_budget=None` (32 samples when
/// neither; an `int`, or over training a list of `(tokens, value)` pairs, each value from
/// the first global step at or past its point in global tokens read, as `pack` too); `length_column=None`, `level=None` (a sample's length); `shuffle=False`,
/// `seed=0`, `chunk_rows=None`, `window=None`; `buckets=None` (bounds, or an `int` of
/// quantile buckets); `drop_last=False`; `rank=0`, `world_size=1`, `elastic=False`
/// (`step_ranks=None`: with `elastic`, the ranks are workers of that many data-parallel
/// ranks, which alone need equal steps under `drop_last`); `prefetch=0` (batches read ahead on a Rust thread); `pack=None` (windows of that many
/// tokens: `batch.cu_seqlens`, `batch.position_ids`, `batch.windows`), `pack_split=True`
/// (`False`: best fit of whole documents, `pack_lookahead=1024`, `pack_overlong="cut"` or
/// `"drop"`), `pack_extra_token=False`, `pack_pad_last=False`; `lazy_shards=True` (over
/// shards in `batch_size` mode, and over a dataset opened by URL in every mode:
/// a shard mapped, or downloaded, when a batch first reads it, the sample lengths a plan
/// needs read from the shards' metadata; `False` maps every shard when the loader is
/// made); `balance=None` (`"tokens"` or `"attention"`: balanced global steps, each step's
/// `world_size` batches of close cost, a sample of `n` tokens costing `n + w·n²`, `batch.cost`)
/// with `attention_weight=None` (`w`, only with `"attention"`; by default `1/(12·4096)`, a
/// causal decoder of width 4096). `docs/python.md` says more.
#[pyclass(frozen, module = "lodtensor")]
pub struct Loader {
    inner: Mutex<Inner>,
    /// The `pyarrow.Schema` of the batches, made on the first `to_pyarrow`.
    schema: Arc<PyOnceLock<Py<PyAny>>>,
}

impl Loader {
    /// A loader over `source` (a file or a sharded dataset) with `options`.
    pub fn build(py: Python<'_>, source: Source, options: Options) -> PyResult<Self> {
        let depth = options.prefetch;
        let loader = py.detach(|| source.with(|s| options.clone().build(s)))?;
        Ok(Loader {
            inner: Mutex::new(Inner {
                next: loader.state(),
                state: State::Idle(Box::new(loader)),
                depth,
                len: None,
                recipe: (source, options),
            }),
            schema: Arc::new(PyOnceLock::new()),
        })
    }

    /// The inner state, locked with the GIL released (another thread may hold it); in a
    /// forked child, the loader is built again first (`Inner::rebuild_after_fork`).
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Inner) -> lodtensor::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut inner = lock(&self.inner);
            inner.rebuild_after_fork()?;
            f(&mut inner).py_err()
        })
    }

    /// What `f` reads from the inner state: at once when the lock is free, else waiting
    /// for it with the GIL released (a thread making a batch holds it; it may need the GIL
    /// to finish, and other Python threads should run meanwhile).
    fn read<T: Send>(&self, py: Python<'_>, f: impl Fn(&Inner) -> T + Send + Sync) -> T {
        match self.inner.try_lock() {
            Ok(inner) => f(&inner),
            Err(TryLockError::Poisoned(poisoned)) => f(&poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => py.detach(|| f(&lock(&self.inner))),
        }
    }
}

impl Loader {
    /// The next batch of epoch `epoch`, `None` at its end or once the loader has left it.
    fn next_of(&self, py: Python<'_>, epoch: u64) -> PyResult<Option<Batch>> {
        // `try_lock` never waits with the GIL held (a thread holding the lock may wait for
        // nothing but the lock's work, done with the GIL released).
        let view = self
            .inner
            .try_lock()
            .ok()
            .and_then(|mut inner| inner.next_view(epoch));
        let batch = match view {
            Some(batch) => batch.py_err()?,
            None => self.with(py, |inner| inner.next_of(epoch))?,
        };
        Ok(batch.map(|b| Batch::new(b, self.schema.clone())))
    }
}

/// What `iter(loader)` returns: the rest of one epoch of a `Loader`, then `StopIteration`
/// for good (the loader itself has moved on to the next epoch).
#[pyclass(frozen, module = "lodtensor", name = "LoaderIterator")]
pub struct EpochIterator {
    loader: Py<Loader>,
    /// The epoch this iterator yields batches of.
    epoch: u64,
    /// Set once the epoch ended for this iterator.
    done: AtomicBool,
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl EpochIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        if self.done.load(Ordering::Acquire) {
            return Ok(None);
        }
        let batch = self.loader.get().next_of(py, self.epoch)?;
        if batch.is_none() {
            self.done.store(true, Ordering::Release);
        }
        Ok(batch)
    }

    /// The epoch this iterator yields batches of.
    #[getter]
    fn epoch(&self) -> u64 {
        self.epoch
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl Loader {
    /// An iterator over the rest of the current epoch.
    fn __iter__(slf: Bound<'_, Self>) -> EpochIterator {
        let epoch = slf
            .get()
            .read(slf.py(), |inner| inner.next.position().epoch);
        EpochIterator {
            loader: slf.unbind(),
            epoch,
            done: AtomicBool::new(false),
        }
    }

    /// Deprecated: `next(iter(loader))`, or an iterator kept (`it = iter(loader)`). The next
    /// batch, moving on into the next epoch after the end of one (as before).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        deprecated::warn(
            py,
            c"next(loader) is deprecated: use it = iter(loader) and next(it), which ends with the epoch",
        )?;
        let epoch = self.read(py, |inner| inner.next.position().epoch);
        self.next_of(py, epoch)
    }

    /// The number of batches of the current epoch (for this rank).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, Inner::epoch_len)
    }

    /// The current epoch.
    #[getter]
    fn epoch(&self, py: Python<'_>) -> u64 {
        self.read(py, |inner| inner.next.position().epoch)
    }

    /// The index of the next batch in the current epoch (with `elastic=True`, the step:
    /// the first batch of the epoch's plan that some rank has not read).
    #[getter]
    fn batch_index(&self, py: Python<'_>) -> usize {
        self.read(py, |inner| inner.next.position().batch)
    }

    /// A hash of the options and the data that make the plan (as in `state_dict`): a state
    /// is only restored into a loader with the same fingerprint.
    #[getter]
    fn fingerprint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        state_dict(py, &self.read(py, |inner| inner.next.clone()))?
            .as_any()
            .get_item("fingerprint")
    }

    /// Starts epoch `epoch` from its first batch (each epoch has its own shuffle).
    fn set_epoch(&self, py: Python<'_>, epoch: u64) -> PyResult<()> {
        self.with(py, |inner| {
            let loader = inner.idle()?;
            loader.set_epoch(epoch);
            inner.next = loader.state();
            Ok(())
        })
    }

    /// Where the loader stands: `{"epoch", "batch", "fingerprint", "parts",
    /// "tokens_before"}`, the next batch to hand out and the options each part of the epoch
    /// so far was read under. Restore it with `load_state_dict` to continue with exactly
    /// that batch, or on a loader with other options (see `load_state_dict`).
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        state_dict(py, &self.read(py, |inner| inner.next.clone()))
    }

    /// Continues from `state` (from `state_dict` or `Batch.next_state_dict`). On a loader
    /// with the same options, exactly from that batch. On one built with `elastic=True` and
    /// other options (`batch_size` or `token_budget`, `pack`, `balance`, `world_size`,
    /// workers, schedules) from a state saved with `elastic=True` too: the rest of the epoch
    /// planned again over the samples (packed: the tokens) no batch before the state read,
    /// each once; a mixture's under other weights too (the rest of its stream drawn by
    /// them). Raises `LodTensorError` naming what differs for other data, another shuffle
    /// or seed, packing turned on or off, a mixture's other sources or seed, or ranks
    /// sharded without `elastic`.
    fn load_state_dict(&self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let state = state_from_dict(state)?;
        self.with(py, |inner| inner.restore(state))
    }

    /// Reads the rest of the current epoch in Rust, handing nothing to Python: the Rust
    /// loader's speed in the same process, for benchmarks. With `column`, each batch also
    /// takes what `Batch.values(column)` and `Batch.offsets(column, level)` hand Python:
    /// the values' address and shape, and the level's offsets from 0 in a new `Vec`.
    /// Returns (batches, tokens).
    #[pyo3(signature = (column = None, level = 0))]
    fn _epoch_in_rust(
        &self,
        py: Python<'_>,
        column: Option<String>,
        level: usize,
    ) -> PyResult<(usize, usize)> {
        self.with(py, |inner| {
            let (mut batches, mut tokens) = (0, 0);
            while let Some(b) = inner.next()? {
                if let Some(column) = &column {
                    let tensor = b.data().column(column)?;
                    std::hint::black_box(values_view(tensor.values(), tensor.elements()));
                    let levels = tensor.num_levels();
                    if level >= levels {
                        return Err(ArgumentError::LevelOutOfBounds { level, levels }.into());
                    }
                    let offsets: Vec<i64> = rebased_offsets(tensor.lod(), level).collect();
                    std::hint::black_box(offsets);
                }
                batches += 1;
                tokens += b.tokens();
            }
            Ok((batches, tokens))
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        self.read(py, |inner| {
            format!(
                "lodtensor.Loader(epoch={}, batch_index={}, prefetch={})",
                inner.next.position().epoch,
                inner.next.position().batch,
                inner.depth
            )
        })
    }
}

/// `state` as a state dict: the crate's JSON form of a loader state, as a `dict`.
pub fn state_dict<'py>(py: Python<'py>, state: &LoaderState) -> PyResult<Bound<'py, PyDict>> {
    py.import("json")?
        .call_method1("loads", (state.to_json(),))?
        .cast_into::<PyDict>()
        .map_err(Into::into)
}

fn state_from_dict(state: &Bound<'_, PyDict>) -> PyResult<LoaderState> {
    let json: String = state
        .py()
        .import("json")?
        .call_method1("dumps", (state,))?
        .extract()?;
    LoaderState::from_json(&json).py_err()
}
