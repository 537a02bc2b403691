//! The built-in synthetic dataset: documents → sentences → tokens, seeded and portable.
//!
//! Documents hold uniformly 1–30 sentences, sentences uniformly 1–120 tokens, each token an
//! `f32[dim]` vector; a 0-level `label` column holds one `i64` per document. The generator
//! is the crate's [`SplitMix64`](crate::rng::SplitMix64), so that a seed gives the same
//! dataset on every machine and in every version of this crate (benchmarks and tests
//! compare across runs).

use std::sync::Arc;

use arrow_array::Float32Array;
use arrow_array::types::Int64Type;

use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::lod::Lod;
use crate::tensor::LodTensor;
use crate::values::Values;

/// The pseudo-random generator, moved to [`crate::rng`].
///
/// # Example
/// ```
/// #![allow(deprecated)]
/// let mut rng = lodtensor::synthetic::SplitMix64::new(7);
/// assert_eq!(rng.next_u64(), lodtensor::rng::SplitMix64::new(7).next_u64());
/// ```
#[deprecated(since = "0.2.0", note = "use lodtensor::rng::SplitMix64")]
pub type SplitMix64 = crate::rng::SplitMix64;

/// Shape of the synthetic documents.
///
/// # Example
/// ```
/// use lodtensor::{rng::SplitMix64, synthetic::Documents};
/// let docs = Documents { dim: 4, ..Documents::default() }.generate(&mut SplitMix64::new(1), 10)?;
/// assert_eq!(docs.num_rows(), 10);
/// assert_eq!(docs.column("tokens")?.element_shape(), &[4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Documents {
    /// Sentences per document, inclusive range.
    pub sentences: (usize, usize),
    /// Tokens per sentence, inclusive range.
    pub tokens: (usize, usize),
    /// Floats per token.
    pub dim: usize,
}

impl Default for Documents {
    fn default() -> Self {
        Documents {
            sentences: (1, 30),
            tokens: (1, 120),
            dim: 64,
        }
    }
}

impl Documents {
    /// The number of documents whose `f32` values are expected to take `bytes` bytes (at
    /// least one): the mean sentences per document × mean tokens per sentence × `dim` × 4.
    ///
    /// # Example
    /// ```
    /// use lodtensor::synthetic::Documents;
    /// // 15.5 sentences × 60.5 tokens × 64 floats × 4 bytes = 240,064 bytes per document.
    /// assert_eq!(Documents::default().docs_for_bytes(1 << 30), 4473);
    /// ```
    pub fn docs_for_bytes(&self, bytes: u64) -> usize {
        let mean = |(lo, hi): (usize, usize)| (lo + hi) as f64 / 2.0;
        let per_doc = mean(self.sentences) * mean(self.tokens) * (self.dim * 4) as f64;
        ((bytes as f64 / per_doc).round() as usize).max(1)
    }

    /// `docs` documents drawn from `rng`: a 2-level `tokens` column (levels `documents`,
    /// `sentences`) and a `label` column.
    ///
    /// # Errors
    /// None in practice; the construction is checked like any other.
    ///
    /// # Example
    /// ```
    /// use lodtensor::{rng::SplitMix64, synthetic::Documents};
    /// let ds = Documents::default().generate(&mut SplitMix64::new(7), 3)?;
    /// assert_eq!(ds.num_rows(), 3);
    /// assert_eq!(ds.column("tokens")?.element_shape(), &[64]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn generate(&self, rng: &mut crate::rng::SplitMix64, docs: usize) -> Result<Dataset> {
        let mut doc_lengths = Vec::with_capacity(docs);
        let mut sentence_lengths = Vec::new();
        for _ in 0..docs {
            let n = rng.range(self.sentences.0, self.sentences.1);
            doc_lengths.push(n);
            for _ in 0..n {
                sentence_lengths.push(rng.range(self.tokens.0, self.tokens.1));
            }
        }
        let tokens: usize = sentence_lengths.iter().sum();
        let items = Float32Array::from_iter_values((0..tokens * self.dim).map(|_| rng.unit()));
        let lod = Lod::try_from_lengths(&[doc_lengths, sentence_lengths])?;
        let tokens = LodTensor::try_new(lod, Values::try_new(Arc::new(items), vec![self.dim])?)?;
        let labels = (0..docs).map(|_| (rng.next_u64() % 10) as i64).collect();
        let label = LodTensor::try_new(
            Lod::default(),
            Values::from_vec::<Int64Type>(labels, vec![])?,
        )?;
        Dataset::try_new(vec![
            Column::new("tokens", tokens).with_level_names(["documents", "sentences"])?,
            Column::new("label", label),
        ])
    }
}

/// The documents of `lodtensor demo` and Python's `lodtensor.demo()` (which write the same
/// files from them): `docs` documents of the default shape from `seed`, generated
/// [`DEMO_CHUNK`] at a time so that a writer streams them.
///
/// # Example
/// ```
/// use lodtensor::synthetic::demo_chunks;
/// let chunks = demo_chunks(250, 42).collect::<Result<Vec<_>, _>>()?;
/// let rows: Vec<usize> = chunks.iter().map(|c| c.num_rows()).collect();
/// assert_eq!(rows, [100, 100, 50]);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub fn demo_chunks(docs: usize, seed: u64) -> impl Iterator<Item = Result<Dataset>> {
    let mut rng = crate::rng::SplitMix64::new(seed);
    (0..docs)
        .step_by(DEMO_CHUNK)
        .map(move |start| Documents::default().generate(&mut rng, DEMO_CHUNK.min(docs - start)))
}

/// Documents per chunk of [`demo_chunks`].
pub const DEMO_CHUNK: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn seeded_and_in_range() {
        let a = Documents::default()
            .generate(&mut SplitMix64::new(1), 20)
            .unwrap();
        let b = Documents::default()
            .generate(&mut SplitMix64::new(1), 20)
            .unwrap();
        assert_eq!(a, b);
        let lod = a.column("tokens").unwrap().lod().clone();
        assert!(
            lod.level_lengths(0)
                .unwrap()
                .iter()
                .all(|&n| (1..=30).contains(&n))
        );
        assert!(
            lod.level_lengths(1)
                .unwrap()
                .iter()
                .all(|&n| (1..=120).contains(&n))
        );
    }
}
