//! The depth of a Parquet file's schema, checked from the footer's bytes before the
//! `parquet` crate reads them: the crate builds the schema tree (and its Arrow schema)
//! by recursion, one stack frame per level, so a schema nested thousands deep (a 16 KB
//! file) overflows the stack. The footer's schema is a flat list of elements in depth-first
//! order, each with its number of children; the depth is counted here with a stack on the
//! heap.

use parquet::file::reader::ChunkReader;

use super::pages::{Fault, I32, LIST, Parse, STRUCT, Thrift};
use crate::error::{Error, FileFormat, Result};
use crate::lod::MAX_LEVELS;

/// The deepest schema read: a column of [`MAX_LEVELS`] LoD levels and a fixed element shape
/// nests two schema levels per list (the `LIST` group and its repeated group), under the
/// root, over the leaf.
pub(super) const MAX_SCHEMA_DEPTH: usize = 2 * (MAX_LEVELS + 1) + 2;

/// Refuses a file whose schema nests deeper than [`MAX_SCHEMA_DEPTH`]. A file whose footer
/// cannot be found or read is left to the `parquet` crate, which names the fault.
///
/// # Errors
/// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) naming the depth.
pub(super) fn check_schema_depth<R: ChunkReader>(reader: &R) -> Result<()> {
    let len = reader.len();
    let Some(tail) = len
        .checked_sub(8)
        .and_then(|at| reader.get_bytes(at, 8).ok())
    else {
        return Ok(());
    };
    if &tail[4..] != b"PAR1" {
        return Ok(());
    }
    let size = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
    let Some(footer) = (len - 8)
        .checked_sub(size)
        .and_then(|at| reader.get_bytes(at, size as usize).ok())
    else {
        return Ok(());
    };
    match schema_children(&footer) {
        Ok(children) => check_depth(&children),
        Err(_) => Ok(()),
    }
}

/// The `num_children` of each schema element of the `FileMetaData` in `footer`, in order.
fn schema_children(footer: &[u8]) -> Parse<Vec<i32>> {
    let mut thrift = Thrift {
        buf: footer,
        pos: 0,
        budget: footer.len() as u64,
    };
    let mut children = Vec::new();
    thrift.read_struct("FileMetaData", &[(2, LIST)], |t, _| {
        let header = t.byte()?;
        if header & 0x0f != STRUCT {
            return Err(Fault::Bad("schema elements are not structs".to_owned()));
        }
        let n = match header >> 4 {
            15 => t.varint()?,
            n => u64::from(n),
        };
        t.spend(n, "schema")?;
        for _ in 0..n {
            let mut count = 0;
            t.read_struct("SchemaElement", &[(5, I32)], |t, _| {
                count = t.i32("num_children")?;
                Ok(())
            })?;
            children.push(count);
        }
        Ok(())
    })?;
    Ok(children)
}

/// Refuses a schema (elements in depth-first order, each with its number of children)
/// deeper than [`MAX_SCHEMA_DEPTH`].
fn check_depth(children: &[i32]) -> Result<()> {
    // The children still to come of each open group, outermost first.
    let mut open: Vec<i32> = Vec::new();
    for (element, &count) in children.iter().enumerate() {
        if open.len() > MAX_SCHEMA_DEPTH {
            return Err(Error::invalid(
                FileFormat::Parquet,
                format!(
                    "footer: schema element {element} is nested {} deep, more than the {MAX_SCHEMA_DEPTH} \
                 that columns of up to {MAX_LEVELS} LoD levels take",
                    open.len()
                ),
            ));
        }
        if let Some(left) = open.last_mut() {
            *left -= 1;
        }
        if count > 0 {
            open.push(count);
        }
        while open.last() == Some(&0) {
            open.pop();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_depth_without_recursion() {
        // root -> a -> b -> leaf, and a sibling leaf of a.
        assert!(check_depth(&[2, 1, 1, 0, 0]).is_ok());
        let chain: Vec<i32> = (0..100_000).map(|i| i32::from(i < 99_999)).collect();
        let err = check_depth(&chain).unwrap_err().to_string();
        assert!(
            err.contains(&format!("nested {} deep", MAX_SCHEMA_DEPTH + 1)),
            "{err}"
        );
        let fits: Vec<i32> = (0..=MAX_SCHEMA_DEPTH)
            .map(|i| i32::from(i < MAX_SCHEMA_DEPTH))
            .collect();
        assert!(check_depth(&fits).is_ok());
    }
}
