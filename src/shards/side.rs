//! The Arrow field of a side column in a manifest (format-spec §7.1): a one-field schema
//! serialized as an Arrow IPC schema message, base64 (as Parquet's `ARROW:schema` key), so
//! that pyarrow alone reads it back (`pyarrow.ipc.read_schema`).

use std::sync::Arc;

use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteOptions};
use arrow_schema::{Field, FieldRef, Schema};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::parse::manifest_error;
use crate::dataset::check_type;
use crate::error::Result;

/// The longest encoded field read: a side column's type is a few hundred bytes.
const MAX_ENCODED_CHARS: usize = 1 << 20;

/// `field` as a base64 IPC schema message of one field (continuation marker, length,
/// flatbuffer).
pub(super) fn encode_field(field: &Field) -> String {
    let schema = Schema::new(vec![field.clone()]);
    let mut tracker = DictionaryTracker::new(true);
    let encoded = IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
        &schema,
        &mut tracker,
        &IpcWriteOptions::default(),
    );
    let message = encoded.ipc_message;
    let len = u32::try_from(message.len()).expect("a one-field schema is far below 4 GiB");
    let mut bytes = Vec::with_capacity(message.len() + 8);
    bytes.extend_from_slice(&[0xff; 4]);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&message);
    STANDARD.encode(bytes)
}

/// The field `text` encodes (see [`encode_field`]), named `name`, of a type a side column
/// may have; errors name the JSON path `at`.
pub(super) fn decode_field(text: &str, name: &str, at: &str) -> Result<FieldRef> {
    if text.len() > MAX_ENCODED_CHARS {
        return Err(manifest_error(
            at,
            format!("{} characters, at most {MAX_ENCODED_CHARS}", text.len()),
        ));
    }
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| manifest_error(at, format!("is not base64: {e}")))?;
    let schema = arrow_ipc::convert::try_schema_from_ipc_buffer(&bytes)
        .map_err(|e| manifest_error(at, format!("is not an Arrow IPC schema: {e}")))?;
    let [field] = schema.fields().iter().collect::<Vec<_>>()[..] else {
        return Err(manifest_error(
            at,
            format!("has {} fields, expected 1", schema.fields().len()),
        ));
    };
    if field.name() != name {
        return Err(manifest_error(
            at,
            format!("names the field {:?}, the column is {name:?}", field.name()),
        ));
    }
    check_type(field.data_type()).map_err(|e| manifest_error(at, e.to_string()))?;
    Ok(Arc::clone(field))
}
