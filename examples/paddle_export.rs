//! Writes LoD tensors built here as Paddle files, with `manifest.json` saying what each
//! holds, for `tests/data/paddle/check_export.py` to load with Paddle.
//!
//! ```sh
//! cargo run --example paddle_export -- /tmp/export
//! python tests/data/paddle/check_export.py /tmp/export
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::BooleanArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
};
use lodtensor::io::paddle;
use lodtensor::{DType, Lod, LodTensor, Values};
use serde_json::{Value, json};

fn items(t: &LodTensor) -> lodtensor::Result<Value> {
    let e = t.elements();
    let size = t.values().element_size();
    Ok(match t.dtype() {
        DType::Bool => {
            let b = t.values().booleans()?;
            json!(
                (e.start * size..e.end * size)
                    .map(|i| b.value(i))
                    .collect::<Vec<_>>()
            )
        }
        DType::Int8 => json!(t.typed_values::<Int8Type>()?),
        DType::Int16 => json!(t.typed_values::<Int16Type>()?),
        DType::Int32 => json!(t.typed_values::<Int32Type>()?),
        DType::Int64 => json!(t.typed_values::<Int64Type>()?),
        DType::UInt8 => json!(t.typed_values::<UInt8Type>()?),
        DType::Float16 => json!(
            t.typed_values::<Float16Type>()?
                .iter()
                .map(|x| x.to_f64())
                .collect::<Vec<_>>()
        ),
        DType::Float32 => json!(t.typed_values::<Float32Type>()?),
        DType::Float64 => json!(t.typed_values::<Float64Type>()?),
        other => panic!("no Paddle dtype {other}"),
    })
}

fn describe(t: &LodTensor) -> lodtensor::Result<Value> {
    let rebased = t.rebased();
    Ok(json!({
        "dtype": t.dtype().name(),
        "dims": t.shape(),
        "lod": rebased.lod().offsets(),
        "items": items(t)?,
    }))
}

/// One tensor of every dtype Paddle has, views and empty ones among them, by name.
fn tensors() -> lodtensor::Result<Vec<(&'static str, LodTensor)>> {
    let lengths = [vec![2, 0, 1], vec![1, 3, 2]];
    let h = half::f16::from_f32;
    let example = LodTensor::from_lengths::<Int64Type>(
        &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
        (0..15).collect(),
        vec![1],
    )?;
    Ok(vec![
        (
            "bool",
            LodTensor::try_new(
                Lod::try_from_lengths(&lengths)?,
                Values::try_new(
                    Arc::new(BooleanArray::from(vec![
                        true, false, true, true, false, true,
                    ])),
                    vec![],
                )?,
            )?,
        ),
        (
            "int8",
            LodTensor::from_lengths::<Int8Type>(&lengths, vec![-128, -1, 0, 1, 2, 127], vec![])?,
        ),
        (
            "int16",
            LodTensor::from_lengths::<Int16Type>(&lengths, (0..12).collect(), vec![2])?,
        ),
        (
            "int32",
            LodTensor::from_lengths::<Int32Type>(
                &lengths,
                (0..6).map(|i| i * -7).collect(),
                vec![],
            )?,
        ),
        ("int64_view", example.slice_rows(1..3)?),
        ("int64_branch", example.branch(&[0, 1])?),
        (
            "uint8",
            LodTensor::from_lengths::<UInt8Type>(&lengths, vec![0, 1, 2, 253, 254, 255], vec![])?,
        ),
        (
            "float16",
            LodTensor::from_lengths::<Float16Type>(
                &lengths,
                vec![h(0.5), h(-2.0), h(1.0), h(0.0), h(65504.0), h(0.25)],
                vec![],
            )?,
        ),
        (
            "float32",
            LodTensor::try_new(
                Lod::default(),
                Values::from_vec::<Float32Type>(
                    (0..24).map(|i| i as f32 / 8.0).collect(),
                    vec![2, 3],
                )?,
            )?,
        ),
        (
            "float64",
            LodTensor::from_lengths::<Float64Type>(&[vec![1, 0, 1]], vec![1e-300, -1e300], vec![])?,
        ),
        ("zero_rows", example.slice_rows(1..1)?),
    ])
}

fn main() -> lodtensor::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: paddle_export DIR"));
    std::fs::create_dir_all(&dir)?;
    let tensors = tensors()?;
    let mut manifest = serde_json::Map::new();
    for (name, t) in &tensors {
        paddle::write_tensor_file(dir.join(format!("{name}.pdtensor")), t)?;
        manifest.insert(format!("{name}.pdtensor"), json!([describe(t)?]));
    }
    let combined = [&tensors[1].1, &tensors[4].1, &tensors[8].1];
    paddle::write_combined_file(dir.join("combined.pdiparams"), combined)?;
    manifest.insert(
        "combined.pdiparams".to_owned(),
        Value::Array(
            combined
                .iter()
                .map(|t| describe(t))
                .collect::<lodtensor::Result<_>>()?,
        ),
    );
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).expect("JSON values serialise"),
    )?;
    println!("wrote {} files to {}", manifest.len(), dir.display());
    Ok(())
}
