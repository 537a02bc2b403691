//! Element shapes folded back from the innermost levels of a file without an Arrow schema.

use crate::DataError;
use crate::dataset::Column;
use crate::error::Result;
use crate::lod::{LevelOffsets, Lod};
use crate::tensor::LodTensor;
use crate::values::Values;

/// Folds the `shape.len()` innermost levels of a scalar column into elements of `shape`.
pub(super) fn fold_levels(column: &Column, shape: &[usize]) -> Result<Column> {
    let t = column.tensor();
    let bad = |reason: String| {
        DataError::ElementShape {
            shape: shape.to_vec(),
            reason,
        }
        .into()
    };
    if !t.element_shape().is_empty() {
        if t.element_shape() == shape {
            return Ok(column.clone());
        }
        return Err(bad(format!(
            "the column's elements already have shape {:?}",
            t.element_shape()
        )));
    }
    let (k, r) = (t.num_levels(), shape.len());
    if k == 0 || r == 0 {
        return Err(bad(format!(
            "the column has {k} levels and scalar elements: there is no level to fold"
        )));
    }
    let t = t.rebased();
    let levels = t.lod().levels();
    let product: usize = shape.iter().product();
    // One innermost level of `product` entries (a flat fixed_shape_tensor, as this crate
    // writes it), else one level per dimension (nested fixed-size lists).
    let folded = if uniform(&levels[k - 1], product).is_ok() {
        1
    } else if r > 1 && r <= k {
        for (j, &dim) in shape.iter().enumerate() {
            let level = k - r + j;
            uniform(&levels[level], dim).map_err(|(i, len)| {
                bad(format!(
                    "level {level}: sequence {i} has {len} entries, not {dim} (nor do the \
                     sequences of level {} all have {product})",
                    k - 1
                ))
            })?;
        }
        r
    } else {
        let (i, len) = uniform(&levels[k - 1], product).expect_err("checked above");
        return Err(bad(format!(
            "level {}: sequence {i} has {len} entries, not {product}",
            k - 1
        )));
    };
    let k_kept = k - folded;
    let kept: Vec<LevelOffsets> = levels[..k_kept].to_vec();
    let lod = Lod::try_new(kept)?;
    let values = Values::try_new(t.values().items().clone(), shape.to_vec())?;
    let tensor = LodTensor::try_new(lod, values)?;
    let names: Vec<String> = column.level_names().iter().take(k_kept).cloned().collect();
    let names = if names.len() == k_kept {
        names
    } else {
        Vec::new()
    };
    Column::new(column.name(), tensor).with_level_names(names)
}

/// `Ok` when every sequence of `offsets` has `len` entries, else the first that does not
/// and its length.
fn uniform(offsets: &LevelOffsets, len: usize) -> std::result::Result<(), (usize, usize)> {
    for i in 1..offsets.len() {
        let found = offsets.get(i) - offsets.get(i - 1);
        if found != len {
            return Err((i - 1, found));
        }
    }
    Ok(())
}
