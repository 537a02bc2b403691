//! 4096-token batches from the mapped file with the `Loader`: in file order (views into
//! the mapping) and shuffled (gathered into reused buffers), against a memcpy of the same
//! bytes in pieces of the same size.

use std::hint::black_box;

use arrow_array::types::Float32Type;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::loader::Loader;
use lodtensor::synthetic::Documents;

use crate::Result;
use crate::measure::{Samples, alternate, repeat};

/// Tokens per batch.
pub const TOKEN_BUDGET: usize = 4096;

/// The timings of delivering one epoch of batches.
pub struct Batches {
    /// In file order.
    pub in_order: Samples,
    /// Shuffled (seeded).
    pub shuffled: Samples,
    /// memcpy of every value, [`TOKEN_BUDGET`] tokens at a time, into one reused buffer.
    pub memcpy: Samples,
}

/// Every batch of the loader's current epoch, each touched (not read).
fn epoch(loader: &mut Loader) -> Result<()> {
    while let Some(batch) = loader.next_batch()? {
        black_box(batch.data().num_rows());
    }
    Ok(())
}

/// Times one epoch in order, then shuffled epochs alternately with the memcpy.
///
/// # Errors
/// Building the loader or a batch fails.
pub fn measure(file: &MappedDataset) -> Result<Batches> {
    let builder = || Loader::builder(file).with_token_budget(TOKEN_BUDGET);
    let mut in_order = builder().build()?;
    let in_order = repeat(5, || epoch(&mut in_order))?;
    let mut shuffled = builder().with_shuffle(7).build()?;
    let values = file
        .batches()
        .iter()
        .map(|b| b.column("tokens")?.typed_values::<Float32Type>())
        .collect::<lodtensor::Result<Vec<_>>>()?;
    let dim = Documents::default().dim;
    let mut scratch = vec![0f32; TOKEN_BUDGET * dim];
    let (shuffled, memcpy) = alternate(
        5,
        || epoch(&mut shuffled),
        || {
            for piece in values.iter().flat_map(|v| v.chunks(TOKEN_BUDGET * dim)) {
                scratch[..piece.len()].copy_from_slice(piece);
                black_box(&scratch);
            }
            Ok(())
        },
    )?;
    Ok(Batches {
        in_order,
        shuffled,
        memcpy,
    })
}
