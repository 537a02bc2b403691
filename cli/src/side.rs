//! Side columns (format-spec §2.2) of an open file, and `--columns`.

use std::ops::Range;

use arrow_array::ArrayRef;
use lodtensor::{ArgumentError, Column, Dataset, Error};

use crate::Result;
use crate::source::{Source, split_rows};

/// A side column (format-spec §2.2): its field, its place among the file's columns, and one
/// array per record batch.
pub struct SideParts {
    pub position: usize,
    pub field: arrow_schema::Field,
    pub arrays: Vec<ArrayRef>,
}

impl SideParts {
    pub fn name(&self) -> &str {
        self.field.name()
    }

    pub fn num_rows(&self) -> usize {
        self.arrays.iter().map(|a| a.len()).sum()
    }

    pub fn null_count(&self) -> usize {
        self.arrays.iter().map(|a| a.null_count()).sum()
    }

    /// The bytes of the arrays' buffers (as far as each array's data reaches into them).
    pub fn bytes(&self) -> usize {
        fn data_bytes(data: &arrow_data::ArrayData) -> usize {
            let buffers: usize = data.buffers().iter().map(|b| b.len()).sum();
            let nulls = data.nulls().map_or(0, |n| n.buffer().len());
            buffers + nulls + data.child_data().iter().map(data_bytes).sum::<usize>()
        }
        self.arrays.iter().map(|a| data_bytes(&a.to_data())).sum()
    }

    /// Rows `rows` as Arrow slices, one per part they touch, each with its part and its
    /// rows in the whole file.
    pub fn rows(&self, rows: Range<usize>) -> Result<Vec<(usize, Range<usize>, ArrayRef)>> {
        let counts: Vec<usize> = self.arrays.iter().map(|a| a.len()).collect();
        Ok(split_rows(&counts, rows)?
            .into_iter()
            .map(|(part, range)| {
                let first: usize = counts[..part].iter().sum();
                let view = self.arrays[part].slice(range.start, range.len());
                (part, first + range.start..first + range.end, view)
            })
            .collect())
    }

    /// The side columns of batches that share a schema, or of `schema` when there is none.
    pub(crate) fn of(
        batches: &[Dataset],
        schema: &arrow_schema::Schema,
    ) -> lodtensor::Result<Vec<SideParts>> {
        let mut sides = Vec::new();
        for (position, field) in schema.fields().iter().enumerate() {
            // The batches say, when there are some: a column of a tensor's type with nulls
            // is a side column (format-spec §2.2).
            let side = match batches.first() {
                Some(first) => first.columns()[position].is_side(),
                None => {
                    let empty = arrow_array::new_empty_array(field.data_type());
                    Column::try_from_arrow(field, empty.as_ref())?.is_side()
                }
            };
            if !side {
                continue;
            }
            let arrays = match batches {
                [] => vec![arrow_array::new_empty_array(field.data_type())],
                _ => batches
                    .iter()
                    .map(|b| b.columns()[position].to_arrow())
                    .collect(),
            };
            sides.push(SideParts {
                position,
                field: field.as_ref().clone(),
                arrays,
            });
        }
        Ok(sides)
    }
}

impl Source {
    /// The side column named `name`, if there is one.
    pub fn side(&self, name: &str) -> Option<&SideParts> {
        self.sides.iter().find(|s| s.name() == name)
    }

    /// Keeps the columns named `names`, in that order (all when none is named): what
    /// `--columns` does to a file read whole.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`] naming the file.
    pub fn project(&mut self, names: &[String]) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let mut columns = std::mem::take(&mut self.columns);
        let mut sides = std::mem::take(&mut self.sides);
        for (position, name) in names.iter().enumerate() {
            if let Some(i) = columns.iter().position(|c| &c.name == name) {
                self.columns.push(columns.remove(i));
            } else if let Some(i) = sides.iter().position(|s| s.name() == name) {
                let mut side = sides.remove(i);
                side.position = position;
                self.sides.push(side);
            } else {
                let missing = Error::from(ArgumentError::NoSuchColumn(name.clone()));
                return Err(missing.in_file(&self.path).into());
            }
        }
        Ok(())
    }
}
