//! An Arrow IPC file written record batch by record batch (what arrow's `FileWriter`
//! writes), each body compressed as asked unless that would make a file this crate's
//! reader refuses: a record batch whose compressed buffers would declare more than
//! [`MAX_RATIO`](crate::io::ipc_check::MAX_RATIO) times the compressed body (very compressible data: zeros, padding, masks)
//! is written uncompressed instead, which Arrow IPC allows per message (format-spec §6).
//!
//! Messages are encoded by arrow-ipc's `StreamEncoder`, which hands back each message as
//! a list of buffers: an uncompressed body is the arrays' own buffers (plus padding), so
//! it is written from them, never copied into a buffer of its own first.

use std::collections::HashSet;
use std::io::Write;
use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::convert::IpcSchemaEncoder;
use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteOptions, StreamEncoder};
use arrow_ipc::{Block, CompressionType, FooterBuilder, MessageHeader, MetadataVersion};
use arrow_schema::{ArrowError, SchemaRef};

use crate::io::ipc_check::check_buffers;

/// The Arrow IPC file's magic, at its start and its end.
const MAGIC: &[u8; 6] = b"ARROW1";

/// The continuation marker that starts every encapsulated message (Arrow IPC, V5).
const CONTINUATION: [u8; 4] = [0xff; 4];

/// Writes an Arrow IPC file: see the module's documentation.
pub(crate) struct IpcFileWriter<W: Write> {
    out: W,
    schema: SchemaRef,
    /// Encodes with the options asked for (compression, maybe).
    encoder: StreamEncoder,
    /// The same options without compression, when compression was asked for.
    plain: Option<IpcWriteOptions>,
    /// Where the next message starts.
    offset: usize,
    /// The ids of the dictionaries written.
    dictionary_ids: HashSet<i64>,
    /// Whether a batch with a replaced dictionary was refused (see `check_dictionary`).
    replaced: bool,
    dictionaries: Vec<Block>,
    batches: Vec<Block>,
}

/// One message among the buffers an encoder returned: where it lies in them (from the
/// continuation marker to the end of its body) and what its block in the file records.
struct Frame {
    header: MessageHeader,
    /// A dictionary batch's id, and whether it is a delta.
    dictionary: Option<(i64, bool)>,
    bytes: Range<usize>,
    /// The message's flatbuffer (padded).
    message: Vec<u8>,
    /// The continuation marker, length and padded metadata, in bytes.
    meta: usize,
    body: usize,
}

impl<W: Write> IpcFileWriter<W> {
    /// Starts the file of `schema` in `out`: its magic and schema message, buffers aligned
    /// to `alignment` bytes, bodies compressed with `compression` where the rule allows.
    pub(crate) fn try_new(
        mut out: W,
        schema: SchemaRef,
        alignment: usize,
        compression: Option<CompressionType>,
    ) -> Result<Self, ArrowError> {
        let plain = IpcWriteOptions::try_new(alignment, false, MetadataVersion::V5)?;
        let options = plain.clone().try_with_compression(compression)?;
        let padding = alignment - MAGIC.len() % alignment;
        out.write_all(MAGIC)?;
        out.write_all(&vec![0; padding % alignment])?;
        let mut tracker = DictionaryTracker::new(true);
        let message = IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
            &schema,
            &mut tracker,
            &options,
        );
        let (meta, body) = arrow_ipc::writer::write_message(&mut out, message, &options)?;
        Ok(IpcFileWriter {
            out,
            encoder: StreamEncoder::try_new_with_options(&schema, options)?,
            schema,
            plain: compression.is_some().then_some(plain),
            offset: MAGIC.len() + padding % alignment + meta + body,
            dictionary_ids: HashSet::new(),
            replaced: false,
            dictionaries: Vec::new(),
            batches: Vec::new(),
        })
    }

    /// Writes `batch` (its dictionaries first, if new), compressed unless its compressed
    /// body would declare more than 1024 times its size.
    ///
    /// # Errors
    /// A dictionary that differs from the one written before for its field (an IPC file
    /// holds one), and what the encoder or `out` return.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        if self.replaced {
            return Err(replacement());
        }
        // The encoder's first messages start with the schema, already written: skipped.
        let buffers = self.encoder.encode(batch)?;
        let messages = frames(&buffers)?;
        let mut fallback = None;
        if let Some(plain) = &self.plain
            && !within_ratio(&buffers, record_batch(&messages)?)?
        {
            // The same batch uncompressed; its dictionaries come from the encoder above
            // (an encoder of its own gives them the schema's ids again).
            let mut encoder = StreamEncoder::try_new_with_options(&self.schema, plain.clone())?;
            let buffers = encoder.encode(batch)?;
            let frame =
                (frames(&buffers)?.into_iter()).find(|f| f.header == MessageHeader::RecordBatch);
            fallback = Some((buffers, frame.ok_or_else(no_batch)?));
        }
        // Every dictionary checked before a byte is written: a refused batch writes nothing.
        for frame in &messages {
            if frame.header == MessageHeader::DictionaryBatch {
                self.check_dictionary(frame.dictionary)?;
            }
        }
        for frame in &messages {
            match frame.header {
                MessageHeader::DictionaryBatch => {
                    self.dictionary_ids
                        .insert(frame.dictionary.map_or(0, |(id, _)| id));
                    let block = self.put(&buffers, frame)?;
                    self.dictionaries.push(block);
                }
                MessageHeader::RecordBatch => {
                    let block = match &fallback {
                        Some((buffers, frame)) => self.put(buffers, frame)?,
                        None => self.put(&buffers, frame)?,
                    };
                    self.batches.push(block);
                }
                MessageHeader::Schema => {}
                other => {
                    let what = format!("the encoder returned a {other:?} message");
                    return Err(ArrowError::IpcError(what));
                }
            }
        }
        Ok(())
    }

    /// Refuses a dictionary batch of an id written before: a replacement or a delta,
    /// neither of which an IPC file holds (arrow's `FileWriter` refuses them too). The
    /// encoder has taken the new dictionary as sent, so every later batch is refused too:
    /// one written would refer to a dictionary the file does not hold.
    fn check_dictionary(&mut self, dictionary: Option<(i64, bool)>) -> Result<(), ArrowError> {
        let Some((id, _)) = dictionary else {
            return Err(ArrowError::IpcError(
                "a dictionary batch without its header".into(),
            ));
        };
        if self.dictionary_ids.contains(&id) {
            self.replaced = true;
            return Err(replacement());
        }
        Ok(())
    }

    /// Writes the message `frame` of `buffers`: its block in the file.
    fn put(&mut self, buffers: &[Buffer], frame: &Frame) -> Result<Block, ArrowError> {
        let mut start = 0;
        for buffer in buffers {
            let end = start + buffer.len();
            let from = frame.bytes.start.clamp(start, end) - start;
            let to = frame.bytes.end.clamp(start, end) - start;
            if from < to {
                self.out.write_all(&buffer.as_slice()[from..to])?;
            }
            start = end;
        }
        let block = Block::new(self.offset as i64, frame.meta as i32, frame.body as i64);
        self.offset += frame.meta + frame.body;
        Ok(block)
    }

    /// Ends the file (end-of-stream marker, footer, magic); returns `out`, flushed.
    pub(crate) fn finish(mut self) -> Result<W, ArrowError> {
        self.out.write_all(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])?;
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let dictionaries = fbb.create_vector(&self.dictionaries);
        let batches = fbb.create_vector(&self.batches);
        let mut tracker = DictionaryTracker::new(true);
        let schema = IpcSchemaEncoder::new()
            .with_dictionary_tracker(&mut tracker)
            .schema_to_fb_offset(&mut fbb, &self.schema);
        let mut footer = FooterBuilder::new(&mut fbb);
        footer.add_version(MetadataVersion::V5);
        footer.add_schema(schema);
        footer.add_dictionaries(dictionaries);
        footer.add_recordBatches(batches);
        let root = footer.finish();
        fbb.finish(root, None);
        let footer = fbb.finished_data();
        self.out.write_all(footer)?;
        self.out.write_all(&(footer.len() as i32).to_le_bytes())?;
        self.out.write_all(MAGIC)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The messages of `buffers` (what an encoder returned for one batch: encapsulated
/// messages, one after the other), in order.
fn frames(buffers: &[Buffer]) -> Result<Vec<Frame>, ArrowError> {
    let total: usize = buffers.iter().map(Buffer::len).sum();
    let mut frames = Vec::new();
    let mut at = 0;
    while at < total {
        let prefix = read(buffers, at..at + 8)?;
        let len = match prefix.split_at(4) {
            (marker, len) if marker == CONTINUATION => {
                i32::from_le_bytes(len.try_into().expect("4 bytes"))
            }
            _ => {
                return Err(ArrowError::IpcError(format!(
                    "no continuation marker at byte {at}"
                )));
            }
        };
        let meta = 8 + usize::try_from(len)
            .map_err(|_| ArrowError::IpcError(format!("metadata length {len} at byte {at}")))?;
        let message = read(buffers, at + 8..at + meta)?;
        let parsed = arrow_ipc::root_as_message(&message)
            .map_err(|e| ArrowError::IpcError(e.to_string()))?;
        let body = usize::try_from(parsed.bodyLength()).map_err(|_| {
            ArrowError::IpcError(format!("body length {} at byte {at}", parsed.bodyLength()))
        })?;
        let dictionary = parsed
            .header_as_dictionary_batch()
            .map(|d| (d.id(), d.isDelta()));
        let header = parsed.header_type();
        frames.push(Frame {
            header,
            dictionary,
            bytes: at..at + meta + body,
            message,
            meta,
            body,
        });
        at += meta + body;
    }
    Ok(frames)
}

/// The bytes `range` of `buffers` taken as one run of bytes, copied.
fn read(buffers: &[Buffer], range: Range<usize>) -> Result<Vec<u8>, ArrowError> {
    let mut bytes = Vec::with_capacity(range.len());
    let mut start = 0;
    for buffer in buffers {
        let end = start + buffer.len();
        let from = range.start.clamp(start, end) - start;
        let to = range.end.clamp(start, end) - start;
        bytes.extend_from_slice(&buffer.as_slice()[from..to]);
        start = end;
    }
    if bytes.len() != range.len() {
        return Err(ArrowError::IpcError(format!(
            "a message ends past its buffers' {start} bytes"
        )));
    }
    Ok(bytes)
}

/// The error of a dictionary replaced, arrow's `FileWriter`'s.
fn replacement() -> ArrowError {
    ArrowError::InvalidArgumentError(
        "Dictionary replacement detected when writing IPC file format. Arrow IPC files \
         only support a single dictionary for a given field across all batches."
            .into(),
    )
}

/// The record batch message among `frames`.
fn record_batch(frames: &[Frame]) -> Result<&Frame, ArrowError> {
    (frames
        .iter()
        .find(|f| f.header == MessageHeader::RecordBatch))
    .ok_or_else(no_batch)
}

/// The error when an encoder returned no record batch message.
fn no_batch() -> ArrowError {
    ArrowError::IpcError("the encoder returned no record batch message".into())
}

/// Whether the record batch message `frame` of `buffers` passes the reader's check of
/// compressed bodies (format-spec §6): what its buffers declare is at most 1024 times its
/// body. Its body is copied to be checked (a compressed body, which the encoder made).
fn within_ratio(buffers: &[Buffer], frame: &Frame) -> Result<bool, ArrowError> {
    let parsed = arrow_ipc::root_as_message(&frame.message)
        .map_err(|e| ArrowError::IpcError(e.to_string()))?;
    let Some(batch) = parsed.header_as_record_batch() else {
        return Ok(true);
    };
    let body = Buffer::from_vec(read(
        buffers,
        frame.bytes.start + frame.meta..frame.bytes.end,
    )?);
    Ok(check_buffers(&batch, &body).is_ok())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, Float32Array, ListArray};
    use arrow_buffer::OffsetBuffer;
    use arrow_ipc::writer::FileWriter;
    use arrow_schema::{DataType, Field};

    use super::*;

    /// A batch of `rows` rows: a list of `f32` (values from `seed`) and a dictionary of
    /// strings (the same dictionary in every batch).
    fn batch(rows: usize, seed: f32) -> RecordBatch {
        let lengths = (0..rows).map(|r| 1 + r % 4);
        let offsets = OffsetBuffer::<i32>::from_lengths(lengths);
        let n = offsets.last() as usize;
        let values = Float32Array::from_iter_values((0..n).map(|i| seed + i as f32));
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let list = ListArray::new(item, offsets, Arc::new(values), None);
        let lang: DictionaryArray<Int32Type> = (0..rows).map(|r| ["en", "fr"][r % 2]).collect();
        let columns: Vec<(&str, ArrayRef)> = vec![("x", Arc::new(list)), ("lang", Arc::new(lang))];
        RecordBatch::try_from_iter(columns).expect("columns of one length")
    }

    /// What arrow's `FileWriter` writes for `batches` (the writer this one replaced).
    fn arrow_file(batches: &[RecordBatch], compression: Option<CompressionType>) -> Vec<u8> {
        let options = IpcWriteOptions::try_new(64, false, MetadataVersion::V5)
            .and_then(|o| o.try_with_compression(compression))
            .expect("valid options");
        let schema = batches[0].schema();
        let mut writer = FileWriter::try_new_with_options(Vec::new(), &schema, options).unwrap();
        for batch in batches {
            writer.write(batch).unwrap();
        }
        writer.into_inner().unwrap()
    }

    fn our_file(batches: &[RecordBatch], compression: Option<CompressionType>) -> Vec<u8> {
        let schema = batches[0].schema();
        let mut writer = IpcFileWriter::try_new(Vec::new(), schema, 64, compression).unwrap();
        for batch in batches {
            writer.write(batch).unwrap();
        }
        writer.finish().unwrap()
    }

    #[test]
    fn an_uncompressed_file_is_byte_for_byte_what_arrows_file_writer_writes() {
        let batches = [batch(100, 0.5), batch(37, 9.0), batch(2, 2.0)];
        assert_eq!(our_file(&batches, None), arrow_file(&batches, None));
    }

    #[cfg(feature = "compression")]
    #[test]
    fn a_compressed_file_within_the_ratio_is_what_arrows_file_writer_writes() {
        let batches = [batch(100, 0.5), batch(37, 9.0)];
        for codec in [CompressionType::ZSTD, CompressionType::LZ4_FRAME] {
            let ours = our_file(&batches, Some(codec));
            assert_eq!(ours, arrow_file(&batches, Some(codec)), "{codec:?}");
        }
    }

    /// A sink that keeps where each slice written to it lay.
    #[derive(Default)]
    struct Pointers(Vec<*const u8>);

    impl Write for Pointers {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.as_ptr());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_uncompressed_body_is_written_from_the_arrays_own_buffers() {
        let batch = batch(1000, 0.5);
        let mut writer = IpcFileWriter::try_new(Pointers::default(), batch.schema(), 64, None);
        let writer = writer.as_mut().unwrap();
        writer.write(&batch).unwrap();
        let list = batch
            .column(0)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap();
        let values = list.values().to_data().buffers()[0].as_ptr();
        assert!(
            writer.out.0.contains(&values),
            "the values were copied first"
        );
    }

    #[test]
    fn a_replaced_dictionary_is_refused() {
        let schema = batch(1, 0.0).schema();
        let mut writer = IpcFileWriter::try_new(Vec::new(), schema.clone(), 64, None).unwrap();
        writer.write(&batch(3, 0.0)).unwrap();
        let lang: DictionaryArray<Int32Type> = ["de", "it", "de"].into_iter().collect();
        let columns = vec![batch(3, 0.0).column(0).clone(), Arc::new(lang) as ArrayRef];
        let other = RecordBatch::try_new(schema, columns).unwrap();
        let error = writer.write(&other).unwrap_err().to_string();
        assert!(error.contains("Dictionary replacement"), "{error}");
        // The encoder took the new dictionary as sent: a later batch would refer to it.
        let error = writer.write(&batch(3, 0.0)).unwrap_err().to_string();
        assert!(error.contains("Dictionary replacement"), "{error}");
    }
}
