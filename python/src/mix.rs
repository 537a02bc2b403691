//! `Mixture`: several datasets drawn from at set proportions (`lt.mix`), and the loaders
//! over them.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::dataset::Dataset;
use crate::error::{IntoPy, invalid};
use crate::loader::{Loader, Source};
use crate::loader_options::Options;
use crate::shards::ShardedDataset;
use lodtensor::loader::{LoaderSource, Schedule};

/// A mixture's weights: one set, or over training a list of `(tokens, [weights])` pairs.
#[derive(Clone, Debug, FromPyObject, IntoPyObject)]
pub enum Weights {
    /// `[0.7, 0.3]`.
    Fixed(Vec<f64>),
    /// `[(0, [0.7, 0.3]), (10**9, [0.5, 0.5])]`.
    Points(Vec<(u64, Vec<f64>)>),
}

/// The sources of a mixture, their weights and its seed: what its loaders are built from.
pub struct Recipe {
    pub sources: Vec<Source>,
    pub weights: Weights,
    pub seed: u64,
}

impl Recipe {
    /// The crate's mixture of `sources` (the recipe's, as loader sources).
    pub fn mixture<'a>(
        &self,
        sources: Vec<LoaderSource<'a>>,
    ) -> PyResult<lodtensor::loader::Mixture<'a>> {
        let mixture = match &self.weights {
            Weights::Fixed(w) => lodtensor::loader::Mixture::new(sources, w.clone()),
            Weights::Points(points) => {
                let schedule = Schedule::new(points.clone()).py_err()?;
                lodtensor::loader::Mixture::new(sources, Vec::new()).with_weight_schedule(schedule)
            }
        };
        Ok(mixture.with_seed(self.seed))
    }
}

/// Several datasets (files or sharded datasets with the same columns) drawn from at set
/// proportions: `lt.mix([a, b], [0.7, 0.3], seed=0)`. `loader(**options)` takes the options
/// of `Dataset.loader`; each batch's `source` says where each of its samples came from, and
/// `samples` is then the row within that source.
#[pyclass(frozen, module = "lodtensor")]
pub struct Mixture {
    recipe: Arc<Recipe>,
    /// The Python datasets of the recipe, in order: what the mixture pickles as.
    datasets: Vec<Py<PyAny>>,
}

/// A mixture of `sources` (each a `Dataset` or a `ShardedDataset`) in proportion to
/// `weights` (positive numbers, normalized; or weights that change over training, a list
/// of `(tokens, [weights])` pairs, the first at 0: each set from the first sample at or
/// past its point in tokens drawn, every source within a sample of its share of the
/// samples drawn under each set), each source shuffled by its own seed derived
/// from the loader's `seed`, this `seed` and its place: Megatron-LM's blended datasets with
/// every count within one sample of its share at every prefix. The sources must have the
/// same columns; a loader refuses them otherwise, naming the first that differs.
#[lodtensor_python_guard::guard]
#[pyfunction]
#[pyo3(signature = (sources, weights, seed = 0))]
pub fn mix(sources: Vec<Bound<'_, PyAny>>, weights: Weights, seed: u64) -> PyResult<Mixture> {
    let sources_given = sources;
    let sources = (sources_given.iter().enumerate())
        .map(|(k, s)| {
            if let Ok(d) = s.cast::<Dataset>() {
                return Ok(Source::File(d.get().file.clone()));
            }
            if let Ok(d) = s.cast::<ShardedDataset>() {
                return Ok(Source::Shards(d.get().data.clone()));
            }
            Err(invalid(format!(
                "source {k} is a {}, not a Dataset or ShardedDataset",
                s.get_type().name()?
            )))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Mixture {
        recipe: Arc::new(Recipe {
            sources,
            weights,
            seed,
        }),
        datasets: sources_given.into_iter().map(Bound::unbind).collect(),
    })
}

impl Mixture {
    fn rows(&self) -> usize {
        self.recipe.sources.iter().map(Source::num_rows).sum()
    }
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl Mixture {
    /// A `Loader` of the mixture's samples (or packed windows): the options of
    /// `Dataset.loader`, applied to every source; an epoch is as many samples as the
    /// sources' own epochs hold together.
    #[pyo3(signature = (**options))]
    fn loader(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Loader> {
        let options = Options::from_kwargs(py, options)?;
        Loader::build(py, Source::Mixture(self.recipe.clone()), options)
    }

    /// The rows of all sources together.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows()
    }

    /// The sources, as given.
    #[getter]
    fn sources(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.datasets.iter().map(|s| s.clone_ref(py)).collect()
    }

    /// The weights, as given.
    #[getter]
    fn weights(&self) -> Weights {
        self.recipe.weights.clone()
    }

    fn __len__(&self) -> usize {
        self.rows()
    }

    /// Pickled as `lt.mix(sources, weights, seed)`, each source as it pickles itself (a
    /// dataset by URL without its credentials).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let mix = py.import("lodtensor")?.getattr("mix")?;
        let datasets = PyList::new(py, self.datasets.iter().map(|d| d.bind(py)))?;
        let args = (datasets, self.recipe.weights.clone(), self.recipe.seed);
        Ok((mix, args.into_pyobject(py)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "Mixture(sources={}, weights={:?}, seed={})",
            self.recipe.sources.len(),
            self.recipe.weights,
            self.recipe.seed
        )
    }
}
