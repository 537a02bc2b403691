//! Sum- and mean-pooling of every sentence of the mapped file (`sequence_pool`).

use arrow_array::types::Float32Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::ops::{PoolType, sequence_pool_typed};

use crate::Result;
use crate::measure::{Samples, repeat};

/// The timings of pooling every sentence.
pub struct Pooling {
    /// Sum over each sentence's tokens.
    pub sum: Samples,
    /// Mean over each sentence's tokens.
    pub mean: Samples,
}

/// Times sum and mean pooling of the sentences (level 1) of every batch of `file`.
///
/// # Errors
/// Pooling fails.
pub fn measure(file: &MappedDataset) -> Result<Pooling> {
    let pool = |kind: PoolType| {
        move || -> Result<()> {
            for batch in file.batches() {
                let tokens = batch.column("tokens")?;
                std::hint::black_box(sequence_pool_typed::<Float32Type>(tokens, 1, kind, 0.0)?);
            }
            Ok(())
        }
    };
    Ok(Pooling {
        sum: repeat(5, pool(PoolType::Sum))?,
        mean: repeat(5, pool(PoolType::Average))?,
    })
}
