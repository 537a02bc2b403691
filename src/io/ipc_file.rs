//! An Arrow IPC file written record batch by record batch (what arrow's `FileWriter`
//! writes), each body compressed as asked unless that would make a file this crate's
//! reader refuses: a record batch whose compressed buffers would declare more than
//! [`MAX_RATIO`](crate::io::ipc_check::MAX_RATIO) times the compressed body (very compressible data: zeros, padding, masks)
//! is written uncompressed instead, which Arrow IPC allows per message (format-spec §6).

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::convert::IpcSchemaEncoder;
use arrow_ipc::writer::{DictionaryTracker, EncodedData, IpcDataGenerator, IpcWriteOptions};
use arrow_ipc::{Block, CompressionType, FooterBuilder, MetadataVersion};
use arrow_schema::{ArrowError, SchemaRef};

use crate::io::ipc_check::check_buffers;

/// The Arrow IPC file's magic, at its start and its end.
const MAGIC: &[u8; 6] = b"ARROW1";

/// Writes an Arrow IPC file: see the module's documentation.
pub(crate) struct IpcFileWriter<W: Write> {
    out: W,
    schema: SchemaRef,
    /// The options asked for (compression, maybe), and the same without compression.
    options: IpcWriteOptions,
    plain: IpcWriteOptions,
    compressed: bool,
    encoder: IpcDataGenerator,
    tracker: DictionaryTracker,
    /// Where the next message starts.
    offset: usize,
    dictionaries: Vec<Block>,
    batches: Vec<Block>,
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
        let encoder = IpcDataGenerator::default();
        let mut tracker = DictionaryTracker::new(true);
        let message =
            encoder.schema_to_bytes_with_dictionary_tracker(&schema, &mut tracker, &options);
        let (meta, body) = arrow_ipc::writer::write_message(&mut out, message, &options)?;
        Ok(IpcFileWriter {
            out,
            schema,
            options,
            plain,
            compressed: compression.is_some(),
            encoder,
            tracker,
            offset: MAGIC.len() + padding % alignment + meta + body,
            dictionaries: Vec::new(),
            batches: Vec::new(),
        })
    }

    /// Writes `batch` (its dictionaries first, if new), compressed unless its compressed
    /// body would declare more than 1024 times its size.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), ArrowError> {
        #[allow(deprecated)] // `encode` needs a context type arrow-ipc does not export.
        let (dictionaries, mut message) =
            (self.encoder).encoded_batch(batch, &mut self.tracker, &self.options)?;
        if self.compressed && !within_ratio(&message) {
            // The same batch uncompressed; its dictionaries were encoded above (a tracker
            // of its own gives them the schema's ids again, and its copies are dropped).
            let mut tracker = DictionaryTracker::new(false);
            let _ = (self.encoder).schema_to_bytes_with_dictionary_tracker(
                &self.schema,
                &mut tracker,
                &self.plain,
            );
            #[allow(deprecated)]
            let (_, plain) = (self.encoder).encoded_batch(batch, &mut tracker, &self.plain)?;
            message = plain;
        }
        for dictionary in dictionaries {
            let block = self.put(dictionary)?;
            self.dictionaries.push(block);
        }
        let block = self.put(message)?;
        self.batches.push(block);
        Ok(())
    }

    /// Writes `message`: its block in the file.
    fn put(&mut self, message: EncodedData) -> Result<Block, ArrowError> {
        let (meta, body) = arrow_ipc::writer::write_message(&mut self.out, message, &self.options)?;
        let block = Block::new(self.offset as i64, meta as i32, body as i64);
        self.offset += meta + body;
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

/// Whether the record batch `message` passes the reader's check of compressed bodies
/// (format-spec §6): what its buffers declare is at most 1024 times its body.
fn within_ratio(message: &EncodedData) -> bool {
    let Ok(parsed) = arrow_ipc::root_as_message(&message.ipc_message) else {
        return false;
    };
    let Some(batch) = parsed.header_as_record_batch() else {
        return true;
    };
    let body = Buffer::from(message.arrow_data.as_slice());
    check_buffers(&batch, &body).is_ok()
}
