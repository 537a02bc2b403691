//! A column as the subcommands see it: its parts (one tensor per record batch, row group
//! or shard's batch), never concatenated.

use std::ops::Range;
use std::path::Path;

use lodtensor::{Column, DType, LodTensor, RowIndex};

use crate::Result;

/// One column: its name, level names, and one tensor per record batch.
pub struct Parts {
    pub name: String,
    pub level_names: Vec<String>,
    pub tensors: Vec<LodTensor>,
}

impl Parts {
    fn first(&self) -> &LodTensor {
        self.tensors
            .first()
            .expect("a column has at least one part")
    }

    pub fn num_levels(&self) -> usize {
        self.first().num_levels()
    }

    pub fn dtype(&self) -> DType {
        self.first().dtype()
    }

    pub fn element_shape(&self) -> &[usize] {
        self.first().element_shape()
    }

    pub fn num_rows(&self) -> usize {
        self.tensors.iter().map(LodTensor::num_rows).sum()
    }

    pub fn num_elements(&self) -> usize {
        self.tensors.iter().map(|t| t.elements().len()).sum()
    }

    /// The number of sequences of `level` over every part.
    pub fn num_sequences(&self, level: usize) -> Result<usize> {
        let mut n = 0;
        for t in &self.tensors {
            n += t.lod().num_sequences(level)?;
        }
        Ok(n)
    }

    /// The lengths of `level` over every part, in order.
    pub fn lengths(&self, level: usize) -> Result<Vec<usize>> {
        let mut all = Vec::new();
        for t in &self.tensors {
            all.extend(t.lod().level_lengths(level)?);
        }
        Ok(all)
    }

    /// The offset width of `level` (`int32` or `int64`; the schema fixes it for every batch).
    pub fn offset_width(&self, level: usize) -> &'static str {
        self.first().lod().levels()[level].width().name()
    }

    /// `level` with its name: `level 1 (sentences)`, or `level 1`.
    pub fn level_label(&self, level: usize) -> String {
        level_label(&self.level_names, level)
    }

    /// Rows `rows` as views, one per part they touch, each with its part (record batch)
    /// and its rows in the whole file.
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<(usize, Range<usize>, LodTensor)>> {
        let counts: Vec<usize> = self.tensors.iter().map(LodTensor::num_rows).collect();
        split_rows(&counts, rows)?
            .into_iter()
            .map(|(part, range)| {
                let first: usize = counts[..part].iter().sum();
                let view = self.tensors[part].slice_rows(range.clone())?;
                Ok((part, first + range.start..first + range.end, view))
            })
            .collect()
    }
}

/// `level` with its name in `names`: `level 1 (sentences)`, or `level 1`.
pub fn level_label(names: &[String], level: usize) -> String {
    match names.get(level) {
        Some(name) => format!("level {level} ({name})"),
        None => format!("level {level}"),
    }
}

/// Columns of `schema` without rows (a file with a schema and no batch).
pub(crate) fn empty_columns(path: &Path, schema: &arrow_schema::Schema) -> Result<Vec<Parts>> {
    let mut columns = Vec::new();
    for field in schema.fields() {
        let empty = arrow_array::new_empty_array(field.data_type());
        let column = Column::try_from_arrow(field, empty.as_ref())
            .map_err(|e| e.in_column(field.name(), 0).in_file(path))?;
        if column.is_side() {
            continue;
        }
        columns.push(Parts {
            name: field.name().clone(),
            level_names: column.level_names().to_vec(),
            tensors: vec![column.tensor().map_err(|e| e.in_file(path))?.clone()],
        });
    }
    Ok(columns)
}

/// Which part each piece of `rows` lies in, for parts of `counts` rows.
///
/// # Errors
/// [`ArgumentError::RowsOutOfBounds`].
pub fn split_rows(counts: &[usize], rows: Range<usize>) -> Result<Vec<(usize, Range<usize>)>> {
    let index = RowIndex::from_counts(counts.iter().copied());
    let mut out = index.split(rows.clone())?;
    if out.is_empty() && index.num_parts() > 0 {
        // An empty range still names a (0-row) view: in the first part that ends at or
        // after it.
        let part = index.starts()[1..].partition_point(|&end| end < rows.start);
        let start = rows.start - index.starts()[part];
        out.push((part, start..start));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_rows_over_parts() {
        assert_eq!(
            split_rows(&[3, 2, 4], 2..6).unwrap(),
            vec![(0, 2..3), (1, 0..2), (2, 0..1)]
        );
        assert_eq!(split_rows(&[3, 2], 3..3).unwrap(), vec![(0, 3..3)]);
        assert!(split_rows(&[3, 2], 4..6).is_err());
    }
}
