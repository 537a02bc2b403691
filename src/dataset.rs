//! `Dataset`: named LoD tensor columns sharing the row (sample) dimension, and their
//! mapping to an Arrow `RecordBatch` with `lodtensor.*` metadata.

use crate::error::{ArgumentError, DataError, FileFormat, UnsupportedError};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::format::{FORMAT_VERSION, FORMAT_VERSION_SIDE_COLUMNS, KEY_FORMAT_VERSION};
use crate::lod::OffsetWidth;
use crate::tensor::LodTensor;

mod column;
mod shape;
mod side;

pub use column::Column;

pub(crate) use side::{check_type, has_nulls, is_side, mark_sides, undeclared_tensors};

/// Named LoD tensor columns with one row count: one row is one sample.
///
/// # Example
/// ```
/// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
/// use arrow_array::types::{Float32Type, Int64Type};
/// let tokens = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], vec![0.5; 6 * 4], vec![4])?;
/// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Int64Type>(vec![7, 9], vec![])?)?;
/// let ds = Dataset::try_new(vec![
///     Column::new("tokens", tokens).with_level_names(["documents", "sentences"])?,
///     Column::new("label", label),
/// ])?;
/// let batch = ds.to_record_batch();
/// assert_eq!(batch.num_rows(), 2);
/// assert_eq!(Dataset::try_from_record_batch(&batch)?, ds);
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    columns: Vec<Column>,
    num_rows: usize,
}

impl Dataset {
    /// A dataset from columns with one row count and distinct names.
    ///
    /// # Errors
    /// [`DataError::ColumnRows`], [`DataError::DuplicateColumn`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::{Float32Type, Int64Type};
    /// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
    /// let tokens = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], vec![0.5; 6], vec![])?;
    /// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Int64Type>(vec![7, 9], vec![])?)?;
    /// let ds = Dataset::try_new(vec![Column::new("tokens", tokens.clone()), Column::new("label", label)])?;
    /// assert_eq!((ds.num_rows(), ds.columns().len()), (2, 2));
    /// // One name twice, or columns of other row counts, are refused:
    /// assert!(Dataset::try_new(vec![Column::new("x", tokens.clone()), Column::new("x", tokens)]).is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn try_new(columns: Vec<Column>) -> Result<Self> {
        let num_rows = columns.first().map_or(0, Column::num_rows);
        // A set of the names seen: a file of many columns (a `.pdiparams` of 200,000 records)
        // is checked in linear time.
        let mut names = std::collections::HashSet::with_capacity(columns.len());
        for c in &columns {
            if c.num_rows() != num_rows {
                return Err(DataError::ColumnRows {
                    column: c.name.clone(),
                    rows: c.num_rows(),
                    expected: num_rows,
                }
                .into());
            }
            if !names.insert(c.name.as_str()) {
                return Err(DataError::DuplicateColumn(c.name.clone()).into());
            }
        }
        Ok(Dataset { columns, num_rows })
    }

    /// A dataset of `columns` that have one row count and distinct names by construction (a
    /// loader's batch of its source's columns), not checked again (the row counts are in
    /// debug builds).
    pub(crate) fn from_checked_columns(columns: Vec<Column>) -> Self {
        let num_rows = columns.first().map_or(0, Column::num_rows);
        debug_assert!(columns.iter().all(|c| c.num_rows() == num_rows));
        Dataset { columns, num_rows }
    }

    /// The number of rows (samples).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// assert_eq!(Dataset::try_new(vec![Column::new("x", t)])?.num_rows(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// The columns, in order.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// assert_eq!(ds.columns().iter().map(Column::name).collect::<Vec<_>>(), ["x"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The tensor of the column named `name`.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`]; [`ArgumentError::NotATensor`] for a side column.
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::{Float32Type, Int64Type};
    /// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
    /// let tokens = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], vec![0.5; 6], vec![])?;
    /// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Int64Type>(vec![7, 9], vec![])?)?;
    /// let ds = Dataset::try_new(vec![Column::new("tokens", tokens), Column::new("label", label)])?;
    /// assert_eq!(ds.column("label")?.typed_values::<Int64Type>()?, &[7, 9]);
    /// assert!(ds.column("nope").is_err());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn column(&self, name: &str) -> Result<&LodTensor> {
        self.column_by_name(name)?.tensor()
    }

    /// The column named `name`, tensor or side column.
    ///
    /// # Errors
    /// [`ArgumentError::NoSuchColumn`].
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lodtensor::arrow::array::StringArray;
    /// use lodtensor::{Column, Dataset, LodTensor};
    /// let embedding = LodTensor::dense::<lodtensor::arrow::types::Float32Type>(vec![0.5; 4], &[2, 2])?;
    /// let ds = Dataset::try_new(vec![
    ///     Column::new("embedding", embedding),
    ///     Column::side("id", Arc::new(StringArray::from(vec![Some("a"), None])))?,
    /// ])?;
    /// let id = ds.column_by_name("id")?;
    /// assert_eq!(id.side_array().unwrap().null_count(), 1);
    /// assert!(ds.column("id").unwrap_err().to_string().contains("side column of type Utf8"));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn column_by_name(&self, name: &str) -> Result<&Column> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| ArgumentError::NoSuchColumn(name.to_owned()).into())
    }

    /// Rows `rows` of every column, as a view.
    ///
    /// # Errors
    /// [`ArgumentError::RowsOutOfBounds`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::arrow::types::{Float32Type, Int64Type};
    /// use lodtensor::{Column, Dataset, Lod, LodTensor, Values};
    /// let tokens = LodTensor::from_lengths::<Float32Type>(&[vec![2, 1], vec![1, 2, 3]], vec![0.5; 6], vec![])?;
    /// let label = LodTensor::try_new(Lod::default(), Values::from_vec::<Int64Type>(vec![7, 9], vec![])?)?;
    /// let ds = Dataset::try_new(vec![Column::new("tokens", tokens), Column::new("label", label)])?;
    /// let second = ds.slice_rows(1..2)?;                       // a view of every column
    /// assert_eq!(second.column("label")?.typed_values::<Int64Type>()?, &[9]);
    /// assert_eq!(second.column("tokens")?.lod().lengths(), vec![vec![1], vec![3]]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<Self> {
        ArgumentError::check_rows(&rows, self.num_rows)?;
        let columns = self
            .columns
            .iter()
            .map(|c| c.slice_rows(rows.clone()))
            .collect::<Result<_>>()?;
        Ok(Dataset {
            columns,
            num_rows: rows.end - rows.start,
        })
    }

    /// The same dataset with every level's offsets in `width` (copies the offsets that
    /// change, never the values).
    ///
    /// # Errors
    /// [`DataError::OffsetOverflow`] when an offset does not fit `width`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// use lodtensor::OffsetWidth;
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?.with_offset_width(OffsetWidth::I32)?;
    /// assert_eq!(ds.column("x")?.lod().levels()[0].width(), OffsetWidth::I32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_offset_width(&self, width: OffsetWidth) -> Result<Self> {
        let columns = self
            .columns
            .iter()
            .map(|c| c.with_offset_width(width))
            .collect::<Result<_>>()?;
        Ok(Dataset {
            columns,
            num_rows: self.num_rows,
        })
    }

    /// The Arrow schema, with the format version (2 when a column is a side column, else 1)
    /// and every column's metadata.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// assert_eq!(ds.schema().fields().len(), 1);
    /// lodtensor::check_version(&ds.schema())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self.columns.iter().map(Column::arrow_field).collect();
        let version = if self.columns.iter().any(Column::is_side) {
            FORMAT_VERSION_SIDE_COLUMNS
        } else {
            FORMAT_VERSION
        };
        Arc::new(Schema::new(fields).with_metadata(HashMap::from([(
            KEY_FORMAT_VERSION.to_owned(),
            version.to_owned(),
        )])))
    }

    /// The dataset as one record batch, sharing every buffer.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// let batch = ds.to_record_batch();
    /// assert_eq!(batch.num_rows(), 2);
    /// assert_eq!(Dataset::try_from_record_batch(&batch)?, ds);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_record_batch(&self) -> RecordBatch {
        self.to_record_batch_with_schema(self.schema())
    }

    /// Like [`Dataset::to_record_batch`], with a schema already made by [`Dataset::schema`].
    pub(crate) fn to_record_batch_with_schema(&self, schema: SchemaRef) -> RecordBatch {
        let arrays = self.columns.iter().map(Column::to_arrow).collect();
        RecordBatch::try_new_with_options(
            schema,
            arrays,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(self.num_rows)),
        )
        .expect("columns share the row count and match the schema built from them")
    }

    /// The dataset a record batch holds, sharing every buffer.
    ///
    /// # Errors
    /// [`UnsupportedError::UnsupportedVersion`] for a newer format; any column's error, wrapped in
    /// with the column attached ([`Error::column`](crate::Error::column), batch 0).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::{Column, Dataset};
    /// # let t = lodtensor::doc_fixtures::words();
    /// let ds = Dataset::try_new(vec![Column::new("x", t)])?;
    /// let back = Dataset::try_from_record_batch(&ds.to_record_batch())?;
    /// assert_eq!(back.column("x")?.num_levels(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_from_record_batch(batch: &RecordBatch) -> Result<Self> {
        Self::try_from_record_batch_at(batch, 0)
    }

    /// The datasets of record batches that share a schema, with one kind per column for
    /// all of them: a column of a tensor's type that its field does not declare a tensor is
    /// a side column when any batch holds a null in it (format-spec §2.2), where
    /// [`Dataset::try_from_record_batch`] decides each batch alone.
    ///
    /// # Errors
    /// As [`Dataset::try_from_record_batch`], naming the batch; [`FileFormat::Ipc`] invalid
    /// when a batch's columns do not match the first batch's schema.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use lodtensor::Dataset;
    /// use lodtensor::arrow::array::{ArrayRef, Int64Array, RecordBatch};
    /// let flags = |v: Vec<Option<i64>>| {
    ///     let a: ArrayRef = Arc::new(Int64Array::from(v));
    ///     RecordBatch::try_from_iter_with_nullable([("flag", a, true)])
    /// };
    /// let batches = [flags(vec![Some(1)])?, flags(vec![None])?];
    /// let datasets = Dataset::try_from_record_batches(&batches)?;
    /// assert!(datasets[0].columns()[0].is_side());   // a null in batch 1: side in both
    /// assert!(!Dataset::try_from_record_batch(&batches[0])?.columns()[0].is_side());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_from_record_batches(batches: &[RecordBatch]) -> Result<Vec<Self>> {
        let Some(first) = batches.first() else {
            return Ok(Vec::new());
        };
        let schema = first.schema();
        let nulls: Vec<usize> = undeclared_tensors(&schema)?
            .into_iter()
            .filter(|&i| {
                (batches.iter())
                    .any(|b| b.columns().get(i).is_some_and(|a| has_nulls(&a.to_data())))
            })
            .collect();
        let schema: SchemaRef = Arc::new(mark_sides(&schema, &nulls));
        let mut datasets: Vec<Self> = Vec::with_capacity(batches.len());
        for (index, batch) in batches.iter().enumerate() {
            let options =
                arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let batch = RecordBatch::try_new_with_options(
                schema.clone(),
                batch.columns().to_vec(),
                &options,
            )
            .map_err(|e| Error::invalid(FileFormat::Ipc, format!("batch {index}: {e}")))?;
            datasets.push(match datasets.first() {
                Some(first) => first.try_from_record_batch_like(&batch, index)?,
                None => Self::try_from_record_batch_at(&batch, index)?,
            });
        }
        Ok(datasets)
    }

    /// Like [`Dataset::try_from_record_batch`], naming the batch `index` in errors.
    /// The dataset of `batch`, batch `index` of the file `self` (an earlier batch) was read
    /// from: the same schema, whose fields were checked for `self`, so only the arrays are
    /// converted.
    pub(crate) fn try_from_record_batch_like(
        &self,
        batch: &RecordBatch,
        index: usize,
    ) -> Result<Self> {
        if batch.num_columns() != self.columns.len() {
            return Err(Error::invalid(
                FileFormat::Ipc,
                format!(
                    "batch {index}: {} columns, the first batch has {}",
                    batch.num_columns(),
                    self.columns.len()
                ),
            ));
        }
        let columns = self
            .columns
            .iter()
            .zip(batch.schema_ref().fields().iter().zip(batch.columns()))
            .map(|(column, (f, a))| {
                column
                    .try_from_arrow_like(f, a)
                    .map_err(|e| e.in_column(f.name(), index))
            })
            .collect::<Result<_>>()?;
        let mut ds = Self::try_new(columns)?;
        ds.num_rows = batch.num_rows();
        Ok(ds)
    }

    pub(crate) fn try_from_record_batch_at(batch: &RecordBatch, index: usize) -> Result<Self> {
        check_version(batch.schema_ref())?;
        let columns = batch
            .schema_ref()
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| {
                Column::try_from_arrow(f, a.as_ref()).map_err(|e| e.in_column(f.name(), index))
            })
            .collect::<Result<_>>()?;
        let mut ds = Self::try_new(columns)?;
        ds.num_rows = batch.num_rows();
        Ok(ds)
    }
}

/// Checks the schema's format version, when it has one: 1, or 2 (side columns).
///
/// # Errors
/// [`UnsupportedError::UnsupportedVersion`].
///
/// # Example
/// ```
/// use lodtensor::arrow::schema::Schema;
/// use std::collections::HashMap;
/// let newer = Schema::empty().with_metadata(HashMap::from([("lodtensor.format_version".into(), "9".into())]));
/// assert!(lodtensor::check_version(&newer).is_err());
/// assert!(lodtensor::check_version(&Schema::empty()).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_version(schema: &Schema) -> Result<()> {
    match schema.metadata().get(KEY_FORMAT_VERSION) {
        Some(v) if v != FORMAT_VERSION && v != FORMAT_VERSION_SIDE_COLUMNS => {
            Err(UnsupportedError::UnsupportedVersion {
                found: v.clone(),
                expected: "1 or 2",
            }
            .into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArgumentError, DataError, Error, ErrorKind, FormatError, UnsupportedError};
    use crate::format::{KEY_DTYPE, KEY_ELEMENT_SHAPE, KEY_LEVEL_NAMES, KEY_LOD_LEVELS};
    use crate::lod::Lod;
    use crate::values::Values;
    use arrow_array::types::{Float32Type, Int64Type};

    pub(super) fn dataset() -> Dataset {
        let tokens = LodTensor::from_lengths::<Float32Type>(
            &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
            (0..60).map(|i| i as f32).collect(),
            vec![2, 2],
        )
        .unwrap();
        let label = LodTensor::try_new(
            Lod::default(),
            Values::from_vec::<Int64Type>(vec![5, 6, 7], vec![]).unwrap(),
        )
        .unwrap();
        Dataset::try_new(vec![
            Column::new("tokens", tokens)
                .with_level_names(["articles", "sentences"])
                .unwrap(),
            Column::new("label", label),
        ])
        .unwrap()
    }

    #[test]
    fn schema_carries_the_metadata() {
        let ds = dataset();
        let schema = ds.schema();
        assert_eq!(schema.metadata()[KEY_FORMAT_VERSION], "1");
        let f = schema.field(0);
        assert_eq!(f.metadata()[KEY_LOD_LEVELS], "2");
        assert_eq!(f.metadata()[KEY_DTYPE], "float32");
        assert_eq!(f.metadata()[KEY_ELEMENT_SHAPE], "[2,2]");
        assert_eq!(f.metadata()[KEY_LEVEL_NAMES], r#"["articles","sentences"]"#);
        let back = Dataset::try_from_record_batch(&ds.to_record_batch()).unwrap();
        assert_eq!(back, ds);
        assert_eq!(back.columns()[0].level_names(), &["articles", "sentences"]);
    }

    #[test]
    fn rows_are_shared_and_sliced_together() {
        let ds = dataset();
        let s = ds.slice_rows(1..3).unwrap();
        assert_eq!(s.num_rows(), 2);
        assert_eq!(
            s.column("label")
                .unwrap()
                .typed_values::<Int64Type>()
                .unwrap(),
            &[6, 7]
        );
        assert!(matches!(
            ds.column("nope").map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
        ));
        assert!(matches!(
            ds.slice_rows(2..4).map_err(Error::into_kind),
            Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds { .. }))
        ));
    }

    #[test]
    fn bad_datasets_are_errors() {
        let ds = dataset();
        let short = ds.columns()[1].tensor().unwrap().slice_rows(0..2).unwrap();
        assert!(matches!(
            Dataset::try_new(vec![ds.columns()[0].clone(), Column::new("label", short)])
                .map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::ColumnRows {
                rows: 2,
                expected: 3,
                ..
            }))
        ));
        assert!(matches!(
            Dataset::try_new(vec![ds.columns()[1].clone(), ds.columns()[1].clone()])
                .map_err(Error::into_kind),
            Err(ErrorKind::Data(DataError::DuplicateColumn(_)))
        ));
        assert!(matches!(
            ds.columns()[1]
                .clone()
                .with_level_names(["x"])
                .map_err(Error::into_kind),
            Err(ErrorKind::Format(FormatError::Metadata { .. }))
        ));
        // Metadata that contradicts the layout.
        let batch = ds.to_record_batch();
        let lying = with_metadata(KEY_DTYPE, "float64");
        let err = Dataset::try_from_record_batch(&lying).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Format(FormatError::Metadata { key: KEY_DTYPE, .. })
            ),
            "{err}"
        );
        // A newer format.
        let newer =
            RecordBatch::try_new(
                Arc::new(Schema::new(batch.schema().fields().clone()).with_metadata(
                    HashMap::from([(KEY_FORMAT_VERSION.to_owned(), "3".to_owned())]),
                )),
                batch.columns().to_vec(),
            )
            .unwrap();
        assert!(matches!(
            Dataset::try_from_record_batch(&newer).map_err(Error::into_kind),
            Err(ErrorKind::Unsupported(
                UnsupportedError::UnsupportedVersion { .. }
            ))
        ));
    }

    /// The batch of `dataset()` with `key` of column 0's metadata set to `value`.
    fn with_metadata(key: &str, value: &str) -> RecordBatch {
        let batch = dataset().to_record_batch();
        let mut fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| (**f).clone())
            .collect();
        let mut m = fields[0].metadata().clone();
        m.insert(key.to_owned(), value.to_owned());
        fields[0] = fields[0].clone().with_metadata(m);
        RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec()).unwrap()
    }

    #[test]
    fn metadata_is_read_as_json_not_text() {
        // Python's json.dumps([2, 2]) and other spellings of the same values.
        for (key, value) in [
            (KEY_ELEMENT_SHAPE, "[2, 2]"),
            (KEY_ELEMENT_SHAPE, " [ 2,\n2 ] "),
            (KEY_LOD_LEVELS, " 2"),
        ] {
            let read = Dataset::try_from_record_batch(&with_metadata(key, value));
            assert_eq!(read.unwrap(), dataset(), "{key} = {value:?}");
        }
        for (key, value) in [
            (KEY_ELEMENT_SHAPE, "[2, 3]"),
            (KEY_ELEMENT_SHAPE, "[4]"),
            (KEY_ELEMENT_SHAPE, "2,2"),
            (KEY_LOD_LEVELS, "3"),
            (KEY_LOD_LEVELS, "two"),
        ] {
            let err = Dataset::try_from_record_batch(&with_metadata(key, value)).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Format(FormatError::Metadata { .. })),
                "{key} = {value:?}: {err}"
            );
        }
    }
}
