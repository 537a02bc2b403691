//! The in-process baselines: arrow-rs's own validated zero-copy open of an IPC file, and a
//! raw sum of `f32` slices. Shared with `benches/storage.rs`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_buffer::Buffer;
use arrow_ipc::reader::FileDecoder;
use arrow_schema::ArrowError;

/// The record batches of `path`, mapped, through arrow-rs's zero-copy recipe with its
/// default validation (every offset) and aligned buffers required.
///
/// # Errors
/// The file cannot be mapped, or arrow-rs rejects it.
pub fn arrow_open(path: &Path) -> Result<Vec<RecordBatch>, Box<dyn std::error::Error>> {
    let file = std::fs::File::open(path)?;
    // SAFETY: benchmark files are not modified while mapped.
    let mmap = unsafe { memmap2::Mmap::map(&file) }?;
    let buffer = Buffer::from(bytes::Bytes::from_owner(mmap));
    let trailer_start = buffer
        .len()
        .checked_sub(10)
        .ok_or_else(|| ArrowError::ParseError("file too short".into()))?;
    let footer_len = arrow_ipc::reader::read_footer_length(buffer[trailer_start..].try_into()?)?;
    let footer = arrow_ipc::root_as_footer(&buffer[trailer_start - footer_len..trailer_start])
        .map_err(|e| ArrowError::ParseError(e.to_string()))?;
    let schema = footer
        .schema()
        .ok_or_else(|| ArrowError::ParseError("no schema".into()))?;
    let schema = arrow_ipc::convert::try_fb_to_schema(schema)?;
    let decoder = FileDecoder::new(Arc::new(schema), footer.version()).with_require_alignment(true);
    let blocks = footer.recordBatches().into_iter().flatten();
    let mut batches = Vec::new();
    for block in blocks {
        let data = buffer.slice_with_length(
            usize::try_from(block.offset())?,
            usize::try_from(block.metaDataLength())? + usize::try_from(block.bodyLength())?,
        );
        batches.extend(decoder.read_record_batch(block, &data)?);
    }
    Ok(batches)
}

/// The floats of the first column (`list<list<fixed_size_list<f32>>>`) of each batch,
/// with the sentence offsets (the inner list's), straight from arrow-rs's arrays.
///
/// # Panics
/// When the first column is not of that type.
pub fn sentences_and_floats(batches: &[RecordBatch]) -> Vec<(&[i64], &[f32])> {
    batches
        .iter()
        .map(|b| {
            let sentences = b.column(0).as_list::<i64>().values().as_list::<i64>();
            let floats = sentences.values().as_fixed_size_list().values();
            (
                sentences.value_offsets(),
                floats.as_primitive::<Float32Type>().values().as_ref(),
            )
        })
        .collect()
}

/// A sum that vectorises: 16 independent accumulators, so that a loop measures reading the
/// values, not the latency of one chain of float additions. Slices are added one after the
/// other into the same accumulators.
#[derive(Clone, Debug, Default)]
pub struct Sum {
    lanes: [f32; 16],
    tail: f32,
}

impl Sum {
    /// Adds every value of `values`.
    pub fn add(&mut self, values: &[f32]) {
        let chunks = values.chunks_exact(16);
        self.tail += chunks.remainder().iter().sum::<f32>();
        for chunk in chunks {
            for (a, v) in self.lanes.iter_mut().zip(chunk) {
                *a += v;
            }
        }
    }

    /// The sum so far.
    pub fn value(&self) -> f32 {
        self.lanes.iter().sum::<f32>() + self.tail
    }
}

/// `n` seeded random (batch, sequence) pairs: a batch uniformly, then one of its
/// `counts[batch]` sequences uniformly. `counts` must be non-empty and without zeros.
pub fn random_pairs(counts: &[usize], n: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = lodtensor::rng::SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let b = rng.range(0, counts.len() - 1);
            (b, rng.range(0, counts[b] - 1))
        })
        .collect()
}
