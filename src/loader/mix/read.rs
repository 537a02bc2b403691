//! A mixture's sources read as one loader's: their record batches and shards one source
//! after the other, their columns checked to be the same.

use super::{Blend, Mixture};
use crate::dataset::Dataset;
use crate::error::{ArgumentError, Result};
use crate::loader::LoaderSource;
use crate::loader::builder::Sourced;
use crate::loader::gather::{ColumnInfo, ValuesInfo};
use crate::row_index::RowIndex;

/// The record batches and shards of every source of `mixture`, one source after the other,
/// and their blend.
///
/// # Errors
/// As [`LoaderSource::read`] for each source; [`ArgumentError::LoaderConfig`] for bad
/// weights, a mixture among the sources, or a column that differs between two sources.
pub(in crate::loader) fn read_mixture(mixture: &Mixture<'_>) -> Result<Sourced> {
    let points = mixture.normalized_points()?;
    let mut all: Option<Sourced> = None;
    let (mut parts, mut shard_rows) = (Vec::new(), Vec::new());
    for (k, source) in mixture.sources().iter().enumerate() {
        if let LoaderSource::Mixture(_) = source {
            return Err(mixed(format!(
                "source {k} is a mixture: give its sources instead"
            )));
        }
        let mut read = source.read()?;
        let batches = RowIndex::from_counts(read.batches.iter().map(Dataset::num_rows));
        let shards = read.shards.num_parts();
        shard_rows.extend((0..shards).map(|s| read.shards.part_rows(s).len()));
        parts.push((batches, read.shards.clone()));
        let Some(all) = all.as_mut() else {
            read.unchecked
                .resize_with(if read.unchecked.is_empty() { 0 } else { shards }, || None);
            all = Some(read);
            continue;
        };
        same_columns(&all.columns, &read.columns, k)?;
        let before = all.shards.num_parts();
        if !(all.unchecked.is_empty() && read.unchecked.is_empty()) {
            all.unchecked.resize_with(before, || None);
            read.unchecked.resize_with(shards, || None);
            all.unchecked.append(&mut read.unchecked);
        }
        all.batches.append(&mut read.batches);
        all.files.append(&mut read.files);
        all.shards = RowIndex::from_counts(shard_rows.iter().copied());
    }
    let mut all = all.expect("normalized_points refuses no sources");
    all.blend = Some(Blend::new(points, mixture.seed(), parts));
    Ok(all)
}

/// A mixture's weights error.
pub(super) fn weights_error(reason: String) -> crate::error::Error {
    ArgumentError::LoaderConfig {
        option: "weights",
        reason,
    }
    .into()
}

/// A mixture's configuration error.
fn mixed(reason: String) -> crate::error::Error {
    ArgumentError::LoaderConfig {
        option: "sources",
        reason,
    }
    .into()
}

/// Checks that source `k`'s columns are the first source's: names, levels, offset widths
/// and values, naming the first that differs.
fn same_columns(first: &[ColumnInfo], other: &[ColumnInfo], k: usize) -> Result<()> {
    let names = |c: &[ColumnInfo]| c.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    if names(first) != names(other) {
        let (a, b) = (names(first), names(other));
        return Err(mixed(format!(
            "source {k} has columns {b:?}, source 0 {a:?}"
        )));
    }
    for (a, b) in first.iter().zip(other) {
        let values = |c: &ColumnInfo| match &c.values {
            ValuesInfo::Tensor {
                dtype,
                element_shape,
                ..
            } => format!("{dtype} elements of shape {element_shape:?}"),
            ValuesInfo::Side(field) => format!("a side column of {}", field.data_type()),
        };
        let (va, vb) = (values(a), values(b));
        if a.widths != b.widths || va != vb {
            return Err(mixed(format!(
                "column {:?} differs: source 0 has {} levels ({:?} offsets) of {va}, source {k} \
                 {} levels ({:?} offsets) of {vb}",
                a.name,
                a.widths.len(),
                a.widths,
                b.widths.len(),
                b.widths,
            )));
        }
    }
    Ok(())
}
