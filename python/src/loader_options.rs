//! The loader's options: declared once (the signature of [`loader_options`]), parsed from
//! Python keywords, and turned into the crate's `LoaderBuilder`.

use lodtensor::ArgumentError;
use lodtensor::loader::{ATTENTION_WEIGHT, Balance, LoaderSource, Schedule};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCFunction, PyDict};

use crate::error::{IntoPy, invalid};

/// An option given as an `int`, or over training as a list of `(tokens, value)` pairs
/// (a [`Schedule`]: each value from its point in global tokens read).
#[derive(Clone, Debug, FromPyObject)]
pub enum Scheduled {
    /// One value.
    Fixed(usize),
    /// `[(0, 8), (1_000_000, 16)]`.
    Points(Vec<(u64, usize)>),
}

impl Scheduled {
    /// The value at 0 tokens.
    pub fn first(&self) -> usize {
        match self {
            Scheduled::Fixed(n) => *n,
            Scheduled::Points(points) => points.first().map_or(0, |p| p.1),
        }
    }

    /// The schedule, when given as one.
    pub fn schedule(&self) -> PyResult<Option<Schedule<usize>>> {
        match self {
            Scheduled::Fixed(_) => Ok(None),
            Scheduled::Points(points) => Schedule::new(points.clone()).py_err().map(Some),
        }
    }
}

/// Length buckets: explicit inclusive upper bounds, or a number of quantile buckets.
#[derive(Clone)]
pub enum Buckets {
    /// No buckets.
    None,
    /// `[64, 256]`: three buckets.
    Bounds(Vec<usize>),
    /// `n` buckets of about as many samples each.
    Quantiles(usize),
}

impl Buckets {
    /// `None`, an `int` (quantile buckets) or a sequence of `int` bounds.
    pub fn from_py(value: Option<Bound<'_, PyAny>>) -> PyResult<Self> {
        match value {
            None => Ok(Buckets::None),
            Some(v) if v.is_none() => Ok(Buckets::None),
            Some(v) => match v.extract::<usize>() {
                Ok(n) => Ok(Buckets::Quantiles(n)),
                Err(_) => v.extract::<Vec<usize>>().map(Buckets::Bounds).map_err(|_| {
                    invalid("buckets must be an int (quantile buckets) or a list of int bounds")
                }),
            },
        }
    }
}

/// The options of `Dataset.loader` and `ShardedDataset.loader`, parsed by
/// [`loader_options`], the one place that declares them.
#[derive(Clone)]
pub struct Options {
    pub batch_size: Option<Scheduled>,
    pub token_budget: Option<Scheduled>,
    pub length_column: Option<String>,
    pub level: Option<usize>,
    pub shuffle: bool,
    pub seed: u64,
    pub chunk_rows: Option<usize>,
    pub window: Option<usize>,
    pub buckets: Buckets,
    pub drop_last: bool,
    pub rank: usize,
    pub world_size: usize,
    pub elastic: bool,
    pub step_ranks: Option<usize>,
    pub prefetch: usize,
    pub pack: Option<Scheduled>,
    pub pack_split: bool,
    pub pack_extra_token: bool,
    pub pack_pad_last: bool,
    pub pack_lookahead: usize,
    pub pack_overlong: String,
    pub lazy_shards: bool,
    pub shared_memory: bool,
    pub balance: Option<String>,
    pub attention_weight: Option<f64>,
    pub cache: String,
}

/// [`Options`] as a Python object, what [`loader_options`] returns.
#[pyclass(frozen, module = "lodtensor", name = "_LoaderOptions")]
pub struct ParsedOptions(Options);

/// The loader options: their keywords, defaults and types are this signature, shared by
/// `Dataset.loader(**options)` and `ShardedDataset.loader(**options)` (a wrong keyword
/// raises `TypeError: loader() got an unexpected keyword argument ...`).
#[lodtensor_python_guard::guard]
#[pyfunction(name = "loader")]
#[pyo3(signature = (*, batch_size = None, token_budget = None, length_column = None,
    level = None, shuffle = false, seed = 0, chunk_rows = None, window = None,
    buckets = None, drop_last = false, rank = 0, world_size = 1, elastic = false,
    step_ranks = None, prefetch = 0, pack = None, pack_split = true, pack_extra_token = false,
    pack_pad_last = false, pack_lookahead = 1024, pack_overlong = "cut".to_owned(),
    lazy_shards = true, shared_memory = false, balance = None, attention_weight = None,
    cache = "shards".to_owned()))]
#[allow(clippy::too_many_arguments)]
pub fn loader_options(
    batch_size: Option<Scheduled>,
    token_budget: Option<Scheduled>,
    length_column: Option<String>,
    level: Option<usize>,
    shuffle: bool,
    seed: u64,
    chunk_rows: Option<usize>,
    window: Option<usize>,
    buckets: Option<Bound<'_, PyAny>>,
    drop_last: bool,
    rank: usize,
    world_size: usize,
    elastic: bool,
    step_ranks: Option<usize>,
    prefetch: usize,
    pack: Option<Scheduled>,
    pack_split: bool,
    pack_extra_token: bool,
    pack_pad_last: bool,
    pack_lookahead: usize,
    pack_overlong: String,
    lazy_shards: bool,
    shared_memory: bool,
    balance: Option<String>,
    attention_weight: Option<f64>,
    cache: String,
) -> PyResult<ParsedOptions> {
    Ok(ParsedOptions(Options {
        batch_size,
        token_budget,
        length_column,
        level,
        shuffle,
        seed,
        chunk_rows,
        window,
        buckets: Buckets::from_py(buckets)?,
        drop_last,
        rank,
        world_size,
        elastic,
        step_ranks,
        prefetch,
        pack,
        pack_split,
        pack_extra_token,
        pack_pad_last,
        pack_lookahead,
        pack_overlong,
        lazy_shards,
        shared_memory,
        balance,
        attention_weight,
        cache,
    }))
}

/// [`loader_options`] as a Python function, made once.
static LOADER_OPTIONS: PyOnceLock<Py<PyCFunction>> = PyOnceLock::new();

impl Options {
    /// The options given as keywords (`**options` of a `loader` method), parsed by
    /// [`loader_options`].
    pub fn from_kwargs(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let parse = LOADER_OPTIONS.get_or_try_init(py, || {
            wrap_pyfunction!(loader_options, py).map(Bound::unbind)
        })?;
        let parsed = (parse.bind(py).call((), kwargs)).map_err(|e| name_overflow(py, kwargs, e))?;
        Ok(parsed.cast::<ParsedOptions>()?.get().0.clone())
    }
}

/// `e`, an `OverflowError` of an option's conversion (which names no option), as an
/// `ArgumentError` that names the first option holding an int out of range (a list's item
/// too), caused by it; other errors as they are.
fn name_overflow(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>, e: PyErr) -> PyErr {
    use pyo3::exceptions::PyOverflowError;
    use pyo3::types::{PyInt, PyList, PyTuple};
    if !e.is_instance_of::<PyOverflowError>(py) {
        return e;
    }
    let out_of_range =
        |v: &Bound<'_, PyAny>| v.is_instance_of::<PyInt>() && v.extract::<u64>().is_err();
    for (key, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
        let items = match value.cast::<PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => match value.cast::<PyTuple>() {
                Ok(tuple) => tuple.iter().collect(),
                Err(_) => vec![value.clone()],
            },
        };
        if let Some(bad) = items.iter().find(|v| out_of_range(v)) {
            let named = crate::error::out_of_range(&key.to_string(), bad);
            named.set_cause(py, Some(e));
            return named;
        }
    }
    e
}

impl Options {
    /// The crate's loader over `source` with these options.
    pub(crate) fn build(self, source: LoaderSource<'_>) -> PyResult<lodtensor::Loader> {
        let mut b = lodtensor::Loader::builder(source);
        let packing = self.packing()?;
        let balance = self.balance()?;
        // Both given: the crate refuses the pair, naming both.
        if let Some(n) = &self.batch_size {
            b = match n.schedule()? {
                Some(schedule) => b.with_batch_size_schedule(schedule),
                None => b.with_batch_size(n.first()),
            };
        }
        if let Some(t) = &self.token_budget {
            b = match t.schedule()? {
                Some(schedule) => b.with_token_budget_schedule(schedule),
                None => b.with_token_budget(t.first()),
            };
        }
        if let Some(schedule) = self
            .pack
            .as_ref()
            .map(Scheduled::schedule)
            .transpose()?
            .flatten()
        {
            b = b.with_pack_schedule(schedule);
        }
        let column = match (self.length_column, self.level) {
            (Some(c), _) => Some(c),
            (None, Some(_)) => Some(default_length_column(source)?),
            (None, None) => None,
        };
        if let Some(column) = column {
            let level = match self.level {
                Some(l) => l,
                None => column_levels(source, &column)?.saturating_sub(1),
            };
            b = b.with_length_column(column, level);
        }
        b = match (self.shuffle, self.chunk_rows, self.window) {
            (true, Some(rows), Some(window)) => b.with_windowed_shuffle(self.seed, rows, window),
            (true, Some(rows), None) => b.with_chunk_shuffle(self.seed, rows),
            (true, None, None) => b.with_shuffle(self.seed),
            (true, None, Some(_)) => return Err(option_error("window", "needs chunk_rows")),
            (false, Some(_), _) => return Err(option_error("chunk_rows", "needs shuffle=True")),
            (false, _, Some(_)) => return Err(option_error("window", "needs shuffle=True")),
            (false, None, None) => b,
        };
        b = match self.buckets {
            Buckets::None => b,
            Buckets::Bounds(bounds) => b.with_buckets(bounds),
            Buckets::Quantiles(n) => b.with_quantile_buckets(n),
        };
        b = match (self.elastic, self.step_ranks) {
            (true, Some(ranks)) => b.elastic_shard_of_workers(self.rank, self.world_size, ranks),
            (true, None) => b.elastic_shard(self.rank, self.world_size),
            (false, None) => b.shard(self.rank, self.world_size),
            (false, Some(_)) => return Err(option_error("step_ranks", "needs elastic=True")),
        };
        if let Some(packing) = packing {
            b = b.with_packing(packing);
        }
        if let Some(balance) = balance {
            b = b.with_balance(balance);
        }
        b = match self.cache.as_str() {
            "shards" => b,
            "ranges" => b.with_range_reads(true),
            other => {
                let reason = format!("must be \"shards\" or \"ranges\", got {other:?}");
                return Err(option_error("cache", &reason));
            }
        };
        let b = (b.with_drop_last(self.drop_last))
            .with_lazy_shards(self.lazy_shards)
            .with_shared_memory(self.shared_memory);
        // Building reads every sample's length (the lengths index, or the shards' metadata).
        lodtensor_cli::returning_freed_memory(|| b.build()).py_err()
    }
}

impl Options {
    /// `balance` and `attention_weight` as the crate's [`Balance`]: `"tokens"` (w = 0) or
    /// `"attention"` (w = `attention_weight`, by default [`ATTENTION_WEIGHT`]).
    fn balance(&self) -> PyResult<Option<Balance>> {
        match (self.balance.as_deref(), self.attention_weight) {
            (None, None) => Ok(None),
            (Some("attention"), w) => Ok(Some(Balance::Attention {
                weight: w.unwrap_or(ATTENTION_WEIGHT),
            })),
            (Some("tokens"), None) => Ok(Some(Balance::Tokens)),
            (None | Some("tokens"), Some(_)) => Err(option_error(
                "attention_weight",
                "needs balance=\"attention\" (balance=\"tokens\" is a weight of 0)",
            )),
            (Some(other), _) => Err(option_error(
                "balance",
                &format!("must be None, \"tokens\" or \"attention\", got {other:?}"),
            )),
        }
    }
}

/// The crate's error for a loader option that is wrong (the message the crate gives for its
/// own checks: `loader option window: needs chunk_rows`).
pub(crate) fn option_error(option: &'static str, reason: &str) -> PyErr {
    let e = ArgumentError::LoaderConfig {
        option,
        reason: reason.to_owned(),
    };
    crate::error::to_py(e.into())
}

/// The tensor columns of `source` and their numbers of levels: from a file's first
/// batch (none for a file without rows), from a sharded dataset's manifest.
fn tensor_levels(source: LoaderSource<'_>) -> Vec<(String, usize)> {
    match source {
        LoaderSource::File(file) => (file.batches().first().into_iter())
            .flat_map(|b| b.columns())
            .filter_map(|c| c.as_tensor().map(|t| (c.name().to_owned(), t.num_levels())))
            .collect(),
        LoaderSource::Shards(data) => (data.columns().iter())
            .map(|c| (c.name.clone(), c.offsets.len()))
            .collect(),
        // The sources must have the same columns: the first one's.
        LoaderSource::Mixture(mixture) => (mixture.sources().first().copied())
            .map(tensor_levels)
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The first column that has levels (the crate's default length column).
fn default_length_column(source: LoaderSource<'_>) -> PyResult<String> {
    (tensor_levels(source).into_iter())
        .find(|(_, levels)| *levels > 0)
        .map(|(name, _)| name)
        .ok_or_else(|| option_error("level", "no column has levels: give length_column too"))
}

/// The number of levels of `column`.
fn column_levels(source: LoaderSource<'_>, column: &str) -> PyResult<usize> {
    match tensor_levels(source)
        .into_iter()
        .find(|(name, _)| name == column)
    {
        Some((_, levels)) => Ok(levels),
        None => Err(option_error(
            "length_column",
            &format!("{column:?} is no tensor column (or no rows tell its levels): give level too"),
        )),
    }
}
