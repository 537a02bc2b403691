//! A sample's length: the column and level that give it, every sample's, and the bounds
//! of buckets at its quantiles.

use super::gather::{ColumnInfo, ValuesInfo};
use crate::dataset::Dataset;
use crate::error::ArgumentError;
use crate::error::Result;
use crate::shards::narrow_length;

/// The column and level that give a sample's length: the one asked for, checked, or the
/// last level of the first column with levels (`None`: every sample has length 1).
pub(super) fn length_column(
    columns: &[ColumnInfo],
    asked: Option<(String, usize)>,
) -> Result<Option<(usize, usize)>> {
    match asked {
        Some((name, level)) => {
            let Some(c) = columns.iter().position(|c| c.name == name) else {
                return Err(ArgumentError::NoSuchColumn(name).into());
            };
            if let ValuesInfo::Side(field) = &columns[c].values {
                return Err(ArgumentError::NotATensor {
                    column: name,
                    data_type: field.data_type().clone(),
                }
                .into());
            }
            ArgumentError::check_level(level, columns[c].widths.len())?;
            Ok(Some((c, level)))
        }
        None => Ok(columns
            .iter()
            .position(|c| !c.widths.is_empty())
            .map(|c| (c, columns[c].widths.len() - 1))),
    }
}

/// The length of every sample of the file, in order.
///
/// # Errors
/// A sample of 2^32 elements or more (`narrow_length`), naming the column and the
/// record batch.
pub(super) fn sample_lengths(
    batches: &[Dataset],
    length: Option<(usize, usize)>,
    rows: usize,
) -> Result<Vec<u32>> {
    let mut lengths = Vec::with_capacity(rows);
    for (i, b) in batches.iter().enumerate() {
        match length {
            Some((c, level)) => {
                let column = &b.columns()[c];
                let lod = column
                    .as_tensor()
                    .expect("the length column is a tensor")
                    .lod();
                for row in 0..b.num_rows() {
                    let found = lod.descend(0, row..row + 1, level + 1).len();
                    let length = narrow_length(found, level, row)
                        .map_err(|e| e.in_column(column.name(), i))?;
                    lengths.push(length);
                }
            }
            None => lengths.extend(std::iter::repeat_n(1, b.num_rows())),
        }
    }
    Ok(lengths)
}

/// A length of 1 for each of `rows` samples (a count from a manifest, untrusted): an I/O
/// error of kind `OutOfMemory` rather than an abort when they do not fit in memory.
pub(super) fn unit_lengths(rows: usize) -> Result<Vec<u32>> {
    let mut lengths = Vec::new();
    lengths.try_reserve_exact(rows).map_err(|_| {
        crate::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("the lengths of {rows} samples do not fit in memory"),
        ))
    })?;
    lengths.resize(rows, 1);
    Ok(lengths)
}

/// Bounds of `n` buckets with about as many samples each (at most one per sample: more
/// would give the same bounds).
pub(super) fn quantile_bounds(lengths: &[u32], n: usize) -> Result<Vec<usize>> {
    if n == 0 {
        return Err(ArgumentError::LoaderConfig {
            option: "buckets",
            reason: "must be at least 1 quantile bucket, got 0".to_owned(),
        }
        .into());
    }
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable();
    let n = n.min(sorted.len().max(1));
    let mut bounds: Vec<usize> = (1..n)
        .filter_map(|q| {
            // The longest length of the lower q/n of the samples.
            let i = q * sorted.len() / n;
            i.checked_sub(1)
                .and_then(|i| sorted.get(i))
                .map(|&l| l as usize)
        })
        .collect();
    bounds.dedup();
    Ok(bounds)
}
