//! The documents of a unit, read in chunks: a text file is one document, a JSON lines
//! file one per line (a string field), a Parquet file or a stream one per row (a string
//! column). A file is a local file or an object of an input URL, read whole.

use std::io::BufRead;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType};

use crate::error::{ArgumentError, DataError, Error, FileFormat, Result};
use crate::tokenize::inputs::{FileKind, Place, Source};

/// A chunk is handed over once its documents hold this many bytes.
const CHUNK_BYTES: usize = 4 << 20;
/// … or once it holds this many documents.
const CHUNK_DOCS: usize = 16_384;

/// Documents read, with where each came from.
#[derive(Default)]
pub(super) struct Chunk {
    pub texts: Vec<String>,
    /// The `source` of each document.
    pub sources: Vec<Arc<str>>,
    /// Input bytes read for this chunk (file sizes; 0 for streams).
    pub bytes: u64,
    /// Text bytes held.
    held: usize,
}

impl Chunk {
    fn push(&mut self, text: String, source: &Arc<str>) {
        self.held += text.len();
        self.texts.push(text);
        self.sources.push(source.clone());
    }

    fn is_full(&self) -> bool {
        self.held >= CHUNK_BYTES || self.texts.len() >= CHUNK_DOCS
    }
}

/// Hands the documents of `source` to `send` in chunks; `field` is the JSON field or column.
pub(super) fn read(
    source: Source,
    field: &str,
    send: &mut dyn FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    let mut chunk = Chunk::default();
    match source {
        Source::Texts(places) => {
            for place in places {
                let name = place.name();
                let bytes = whole(&place)?;
                chunk.bytes += bytes.len() as u64;
                let text = String::from_utf8(bytes).map_err(|e| {
                    let at = e.utf8_error().valid_up_to();
                    Error::invalid(FileFormat::Text, format!("byte {at}: not UTF-8")).in_file(&name)
                })?;
                chunk.push(text, &Arc::from(name));
                if chunk.is_full() {
                    send(std::mem::take(&mut chunk))?;
                }
            }
        }
        Source::File(place, FileKind::JsonLines) => {
            let name = place.name();
            json_lines(&place, field, &mut chunk, send).map_err(|e| e.in_file(&name))?
        }
        Source::File(place, FileKind::Parquet) => {
            let name = place.name();
            let (reader, bytes) = parquet_batches(&place, field).map_err(|e| e.in_file(&name))?;
            let fault = Error::decoding(FileFormat::Parquet);
            batches(
                reader,
                field,
                &Arc::from(name.as_str()),
                &fault,
                &mut chunk,
                send,
            )
            .map_err(|e| e.in_file(&name))?;
            chunk.bytes = bytes;
        }
        Source::File(place, FileKind::Text) => {
            return read(Source::Texts(vec![place]), field, send);
        }
        Source::Stream(name, reader) => {
            batches(
                reader,
                field,
                &Arc::from(name),
                &Error::from,
                &mut chunk,
                send,
            )?;
        }
    }
    if !chunk.texts.is_empty() || chunk.bytes > 0 {
        send(chunk)?;
    }
    Ok(())
}

/// The bytes of the file at `place`, whole (an object up to its limit).
fn whole(place: &Place) -> Result<Vec<u8>> {
    match place {
        Place::Path(path) => std::fs::read(path).map_err(|e| Error::from(e).in_file(path)),
        #[cfg(feature = "remote")]
        Place::Object(object) => Ok(Vec::from(object.read()?)),
    }
}

/// The file at `place` as lines: a local file read as it goes, an object read whole.
fn lines(place: &Place) -> Result<Box<dyn BufRead>> {
    match place {
        Place::Path(path) => {
            let file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
            Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, file)))
        }
        #[cfg(feature = "remote")]
        Place::Object(object) => Ok(Box::new(std::io::Cursor::new(object.read()?))),
    }
}

/// The documents of the JSON lines file at `place`: the string `field` of each line's
/// object (blank lines skipped).
fn json_lines(
    place: &Place,
    field: &str,
    chunk: &mut Chunk,
    send: &mut dyn FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    let name: Arc<str> = Arc::from(place.name());
    let mut reader = lines(place)?;
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = match reader.read_line(&mut line) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(bad_line(number, "not UTF-8"));
            }
            Err(e) => return Err(e.into()),
        };
        if read == 0 {
            break;
        }
        chunk.bytes += read as u64;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| bad_line(number, &format!("not JSON: {e}")))?;
        let serde_json::Value::Object(mut object) = value else {
            return Err(bad_line(number, "not a JSON object"));
        };
        match object.remove(field) {
            Some(serde_json::Value::String(text)) => chunk.push(text, &name),
            Some(other) => {
                let what = format!("field {field:?} is not a string but {other}");
                return Err(bad_line(number, &truncate(what)));
            }
            None => {
                let fields: Vec<&String> = object.keys().take(8).collect();
                let what = format!("no field {field:?} (fields: {fields:?})");
                return Err(bad_line(number, &what));
            }
        }
        if chunk.is_full() {
            send(std::mem::take(chunk))?;
        }
    }
    Ok(())
}

/// The error of line `number` of a JSON lines file.
fn bad_line(number: usize, what: &str) -> Error {
    Error::invalid(FileFormat::JsonLines, format!("line {number}: {what}"))
}

/// At most 200 characters of `text`.
fn truncate(text: String) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The documents of `reader`'s string column `field`, one per row.
fn batches<R: RecordBatchReader + ?Sized>(
    reader: Box<R>,
    field: &str,
    name: &Arc<str>,
    fault: &dyn Fn(ArrowError) -> Error,
    chunk: &mut Chunk,
    send: &mut dyn FnMut(Chunk) -> Result<()>,
) -> Result<()> {
    let index = reader
        .schema()
        .index_of(field)
        .map_err(|_| ArgumentError::NoSuchColumn(field.to_owned()))?;
    let mut row = 0;
    for batch in reader {
        let batch: RecordBatch = batch.map_err(fault)?;
        let column = batch.column(index);
        if column.null_count() > 0 {
            return Err(DataError::Nulls {
                what: format!("column {field:?} (rows {row}..{})", row + batch.num_rows()),
                count: column.null_count(),
            }
            .into());
        }
        let texts: Box<dyn Iterator<Item = &str>> = match column.data_type() {
            DataType::Utf8 => Box::new(column.as_string::<i32>().iter().flatten()),
            DataType::LargeUtf8 => Box::new(column.as_string::<i64>().iter().flatten()),
            DataType::Utf8View => Box::new(column.as_string_view().iter().flatten()),
            other => {
                return Err(Error::invalid_argument(
                    "tokenize",
                    "field",
                    format!("{field:?}, a column of {other}"),
                    "a string column",
                ));
            }
        };
        for text in texts {
            chunk.push(text.to_owned(), name);
            if chunk.is_full() {
                send(std::mem::take(chunk))?;
            }
        }
        row += batch.num_rows();
    }
    Ok(())
}

/// The record batches of the column `field` of the Parquet file at `place`, and the file's
/// size.
#[cfg(feature = "parquet")]
fn parquet_batches(place: &Place, field: &str) -> Result<(Box<dyn RecordBatchReader>, u64)> {
    match place {
        Place::Path(path) => {
            let file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
            let bytes = file.metadata().map_or(0, |m| m.len());
            Ok((parquet_column(file, field)?, bytes))
        }
        #[cfg(feature = "remote")]
        Place::Object(object) => {
            let bytes = object.read()?;
            let size = bytes.len() as u64;
            Ok((parquet_column(bytes, field)?, size))
        }
    }
}

/// The record batches of the column `field` of the Parquet file `file`.
#[cfg(feature = "parquet")]
fn parquet_column<F: parquet::file::reader::ChunkReader + 'static>(
    file: F,
    field: &str,
) -> Result<Box<dyn RecordBatchReader>> {
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let decoding = Error::decoding(FileFormat::Parquet);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(&decoding)?;
    let index = builder
        .schema()
        .index_of(field)
        .map_err(|_| ArgumentError::NoSuchColumn(field.to_owned()))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [index]);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(1024)
        .build()
        .map_err(&decoding)?;
    Ok(Box::new(reader))
}

/// Without the `parquet` feature: an error saying so.
#[cfg(not(feature = "parquet"))]
fn parquet_batches(_place: &Place, _field: &str) -> Result<(Box<dyn RecordBatchReader>, u64)> {
    Err(Error::invalid_argument(
        "tokenize",
        "inputs",
        "a Parquet file",
        "text or JSON lines files: this lodtensor was built without the `parquet` feature",
    ))
}
