//! The canonical `arrow.fixed_shape_tensor` extension type, written and parsed by hand.
//!
//! Metadata is written as `{"shape":[D1,D2,…]}` with absent keys omitted (pyarrow refuses
//! `null` for `dim_names`), and parsed leniently: `dim_names` is accepted and ignored,
//! `permutation` is accepted when it is the identity.

use crate::error::FormatError;
use arrow_schema::Metadata;
use serde_json::Value;

use crate::error::Result;

/// `ARROW:extension:name` of the element type.
///
/// # Example
/// ```
/// use lodtensor::extension::{EXTENSION_NAME, EXTENSION_NAME_KEY, metadata};
/// assert_eq!(metadata(&[2, 3])[EXTENSION_NAME_KEY], EXTENSION_NAME);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const EXTENSION_NAME: &str = "arrow.fixed_shape_tensor";
/// Field metadata key of an extension type's name.
///
/// # Example
/// ```
/// use lodtensor::extension::{EXTENSION_NAME_KEY, metadata};
/// assert_eq!(metadata(&[4])[EXTENSION_NAME_KEY], "arrow.fixed_shape_tensor");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// Field metadata key of an extension type's parameters.
///
/// # Example
/// ```
/// use lodtensor::extension::{EXTENSION_METADATA_KEY, metadata};
/// assert_eq!(metadata(&[2, 3])[EXTENSION_METADATA_KEY], r#"{"shape":[2,3]}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// The field metadata that tags a `FixedSizeList` as a tensor of `shape`.
///
/// # Example
/// ```
/// use lodtensor::extension::{metadata, parse_shape};
/// assert_eq!(parse_shape(&metadata(&[2, 3]), 6)?, Some(vec![2, 3]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn metadata(shape: &[usize]) -> Metadata {
    let shape = serde_json::to_string(shape).expect("a list of integers serialises");
    Metadata::from([
        (EXTENSION_NAME_KEY, EXTENSION_NAME.to_owned()),
        (EXTENSION_METADATA_KEY, format!("{{\"shape\":{shape}}}")),
    ])
}

/// The element shape declared by a field's metadata, if it is tagged
/// `arrow.fixed_shape_tensor`; checked against the `FixedSizeList` size `list_size`.
///
/// # Errors
/// [`FormatError::ExtensionMetadata`] when the metadata is missing, not JSON, has no valid
/// `shape`, has a non-identity `permutation`, or its shape's product is not `list_size`.
///
/// # Example
/// ```
/// use lodtensor::extension::{metadata, parse_shape};
/// assert_eq!(parse_shape(&Default::default(), 6)?, None);           // not tagged
/// assert!(parse_shape(&metadata(&[2, 3]), 5).is_err());             // 2 × 3 is not 5
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_shape(field_metadata: &Metadata, list_size: usize) -> Result<Option<Vec<usize>>> {
    if field_metadata.get(EXTENSION_NAME_KEY).map(String::as_str) != Some(EXTENSION_NAME) {
        return Ok(None);
    }
    let raw = field_metadata
        .get(EXTENSION_METADATA_KEY)
        .map(String::as_str)
        .unwrap_or("");
    let bad = |reason: &str| {
        FormatError::ExtensionMetadata {
            metadata: raw.to_owned(),
            reason: reason.to_owned(),
        }
        .into()
    };
    let json: Value = serde_json::from_str(raw).map_err(|e| bad(&e.to_string()))?;
    let dims = |key: &str| -> Result<Option<Vec<usize>>> {
        match json.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|d| usize::try_from(d).ok())
                        .ok_or_else(|| bad(&format!("{key} must hold non-negative integers")))
                })
                .collect::<Result<_>>()
                .map(Some),
            Some(_) => Err(bad(&format!("{key} must be an array"))),
        }
    };
    let shape = dims("shape")?.ok_or_else(|| bad("shape is missing"))?;
    if let Some(permutation) = dims("permutation")?
        && permutation.iter().enumerate().any(|(i, &p)| i != p)
    {
        return Err(bad("only the identity permutation is supported"));
    }
    if !matches!(json.get("dim_names"), None | Some(Value::Array(_))) {
        return Err(bad("dim_names must be an array"));
    }
    let product = shape
        .iter()
        .try_fold(1usize, |p, &d| p.checked_mul(d))
        .ok_or_else(|| bad("the shape's product overflows"))?;
    if product != list_size {
        return Err(bad(&format!(
            "the shape's product ({product}) is not the list size ({list_size})"
        )));
    }
    Ok(Some(shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind, FormatError};

    fn tagged(json: &str) -> Metadata {
        Metadata::from([
            (EXTENSION_NAME_KEY, EXTENSION_NAME),
            (EXTENSION_METADATA_KEY, json),
        ])
    }

    #[test]
    fn writes_what_pyarrow_reads() {
        let m = metadata(&[2, 3]);
        assert_eq!(m[EXTENSION_METADATA_KEY], r#"{"shape":[2,3]}"#);
        assert_eq!(parse_shape(&m, 6).unwrap(), Some(vec![2, 3]));
    }

    #[test]
    fn reads_what_pyarrow_writes() {
        let m = tagged(r#"{"shape":[2,2],"dim_names":["C","H"],"permutation":[0,1]}"#);
        assert_eq!(parse_shape(&m, 4).unwrap(), Some(vec![2, 2]));
        assert_eq!(parse_shape(&Metadata::new(), 4).unwrap(), None);
    }

    #[test]
    fn bad_metadata_is_an_error() {
        for (json, size) in [
            ("not json", 4),
            (r#"{"dim_names":null}"#, 4),
            (r#"{"shape":[2,2],"dim_names":null}"#, 4),
            (r#"{"shape":[2,-2]}"#, 4),
            (r#"{"shape":[2,2],"permutation":[1,0]}"#, 4),
            (r#"{"shape":[2,3]}"#, 4),
            (r#"{"shape":4}"#, 4),
        ] {
            assert!(
                matches!(
                    parse_shape(&tagged(json), size).map_err(Error::into_kind),
                    Err(ErrorKind::Format(FormatError::ExtensionMetadata { .. }))
                ),
                "{json}"
            );
        }
    }
}
