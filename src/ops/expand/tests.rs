//! Unit and property tests of `sequence_expand`, its view and `sequence_expand_as`.

use super::*;
use crate::error::{ArgumentError, DataError, Error, ErrorKind, UnsupportedError};
use crate::ops::model;
use arrow_array::types::{Float32Type, Float64Type, Int32Type};
use arrow_array::{FixedSizeListArray, RecordBatch};
use arrow_schema::Schema;
use proptest::prelude::*;

fn plain<T: arrow_array::types::ArrowPrimitiveType>(
    items: Vec<T::Native>,
    shape: Vec<usize>,
) -> LodTensor {
    LodTensor::try_new(Lod::default(), Values::from_vec::<T>(items, shape).unwrap()).unwrap()
}

/// The reference documents' example ("Prepare Data" section and complete code): x =
/// [1.1, 2.2, 3.3, 4.4] with lengths [[1, 3]]; y with lengths [[1, 3], [1, 2, 1, 2]]
/// (and [[1, 3], [2, 1, 2, 1]]); ref_level 0 → data [1.1, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4,
/// 2.2, 3.3, 4.4], lengths [[1, 3, 3, 3]].
#[test]
fn reference_documents_example() {
    let x =
        LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])
            .unwrap();
    for y1 in [vec![1, 2, 1, 2], vec![2, 1, 2, 1]] {
        let y = LodTensor::from_lengths::<Float32Type>(&[vec![1, 3], y1], vec![1.1; 6], vec![1])
            .unwrap();
        let out = sequence_expand(&x, &y, 0).unwrap();
        assert_eq!(out.lod().lengths(), vec![vec![1, 3, 3, 3]]);
        assert_eq!(
            out.typed_values::<Float32Type>().unwrap(),
            &[1.1, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4]
        );
        assert_eq!(out.shape(), vec![10, 1]);
    }
}

/// Paddle, case 1: x.lod = [[0, 2, 4]], x.data = [[a], [b], [c], [d]], y.lod =
/// [[0, 2, 4], [0, 3, 6, 7, 8]], ref_level: 0 → out.lod = [[0, 2, 4, 6, 8]],
/// out.data = [[a], [b], [a], [b], [c], [d], [c], [d]], out.dims = [8, 1].
#[test]
fn paddle_case_1() {
    let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 2]], vec![1, 2, 3, 4], vec![1]).unwrap();
    let y = Lod::try_from_offsets(&[vec![0, 2, 4], vec![0, 3, 6, 7, 8]]).unwrap();
    let out = sequence_expand(&x, &y, 0).unwrap();
    assert_eq!(out.lod().offsets(), vec![vec![0, 2, 4, 6, 8]]);
    assert_eq!(
        out.typed_values::<Int32Type>().unwrap(),
        &[1, 2, 1, 2, 3, 4, 3, 4]
    );
    assert_eq!(out.shape(), vec![8, 1]);
}

/// Paddle, case 2: x is a Tensor, x.data = [[a], [b], [c]], x.dims = [3, 1]; y.lod =
/// [[0, 2, 2, 5]]; ref_level: -1 → "then output is a Tensor": out.data = [[a], [a], [c],
/// [c], [c]], out.dims = [5, 1]. Paddle's kernel writes the output LoD only "if x has
/// lod", so the output has none.
#[test]
fn paddle_case_2_empty_sequence_and_no_lod() {
    let x = plain::<Int32Type>(vec![1, 2, 3], vec![1]);
    let y = Lod::try_from_offsets(&[vec![0, 2, 2, 5]]).unwrap();
    let out = sequence_expand(&x, &y, -1).unwrap();
    assert_eq!(out.num_levels(), 0);
    assert_eq!(out.typed_values::<Int32Type>().unwrap(), &[1, 1, 3, 3, 3]);
    assert_eq!(out.shape(), vec![5, 1]);
}

/// Paddle's operator comment example: x.lod = [[0, 2, 3]] (sequences [a, b], [c]),
/// y.lod = [[0, 2, 4], [0, 3, 6, 6, 8]], ref_level 0 → out.lod = [[0, 2, 4, 5, 6]],
/// out.data = [a, b, a, b, c, c].
#[test]
fn paddle_operator_comment_example() {
    let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 1]], vec![1, 2, 3], vec![]).unwrap();
    let y = Lod::try_from_offsets(&[vec![0, 2, 4], vec![0, 3, 6, 6, 8]]).unwrap();
    let out = sequence_expand(&x, &y, 0).unwrap();
    assert_eq!(out.lod().offsets(), vec![vec![0, 2, 4, 5, 6]]);
    assert_eq!(
        out.typed_values::<Int32Type>().unwrap(),
        &[1, 2, 1, 2, 3, 3]
    );
    // At ref_level -1 (y's level 1, 4 sequences) the counts do not match.
    assert!(matches!(
        sequence_expand(&x, &y, -1).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::SequenceCountMismatch {
            level: 1,
            found: 2,
            expected: 4,
            ..
        }))
    ));
}

#[test]
fn view_shares_the_values_buffer() {
    let x =
        LodTensor::from_lengths::<Float32Type>(&[vec![1, 3]], vec![1.1, 2.2, 3.3, 4.4], vec![1])
            .unwrap();
    let y = Lod::try_from_lengths(&[vec![1, 3], vec![1, 2, 1, 2]]).unwrap();
    let view = sequence_expand_view(&x, &y, 0).unwrap();
    let fsl = view
        .as_list_view()
        .values()
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .unwrap();
    let child = fsl.values().to_data();
    assert_eq!(child.buffers()[0].as_ptr(), x.values().as_ptr());
    assert_eq!(view.as_list_view().value_offsets(), &[0, 1, 1, 1]);
    assert_eq!(view.as_list_view().value_sizes(), &[1, 3, 3, 3]);
    // The sliced view of a bigger tensor points into the same buffer too.
    let big = LodTensor::from_lengths::<Float32Type>(
        &[vec![2, 1, 3]],
        vec![0.0, 0.5, 1.1, 2.2, 3.3, 4.4],
        vec![],
    )
    .unwrap();
    let x = big.slice_rows(1..3).unwrap();
    let view = sequence_expand_view(&x, &y, 0).unwrap();
    assert_eq!(
        view.as_list_view().values().to_data().buffers()[0].as_ptr(),
        big.values().as_ptr()
    );
    assert_eq!(view.as_list_view().value_offsets(), &[2, 3, 3, 3]);
    let out = view.materialize().unwrap();
    assert_eq!(
        out.typed_values::<Float32Type>().unwrap(),
        &[1.1, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4, 2.2, 3.3, 4.4]
    );
}

/// arrow-rs 60 writes and reads a `LargeListView` with overlapping entries through IPC
/// files; the shared elements are written once, and decoding from one buffer copies
/// nothing.
#[test]
fn list_view_round_trips_through_ipc() {
    let x = LodTensor::from_lengths::<Float32Type>(
        &[vec![1, 3]],
        (0..4 * 64).map(|i| i as f32).collect(),
        vec![64],
    )
    .unwrap();
    let y = Lod::try_from_lengths(&[vec![1, 100]]).unwrap();
    let view = sequence_expand_view(&x, &y, 0).unwrap();
    let field = view.field("x");
    let schema = Arc::new(Schema::new(vec![field]));
    let column: ArrayRef = Arc::new(view.as_list_view().clone());
    let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
    let mut file = Vec::new();
    {
        let mut w = arrow_ipc::writer::FileWriter::try_new(&mut file, &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    }
    // For checking other readers (pyarrow) against the same file.
    if let Some(path) = std::env::var_os("LODTENSOR_WRITE_LISTVIEW_IPC") {
        std::fs::write(path, &file).unwrap();
    }
    // 4 elements of 64 f32 (1 KiB) stored once, not 301 times (75 KiB).
    assert!(file.len() < 8 * 1024, "{} bytes", file.len());
    // Decoded from one aligned buffer (as from a memory map), the list view's values
    // point into that buffer: no copy.
    let buffer = arrow_buffer::Buffer::from_slice_ref(&file);
    let trailer: [u8; 10] = file[file.len() - 10..].try_into().unwrap();
    let footer_len = arrow_ipc::reader::read_footer_length(trailer).unwrap();
    let footer =
        arrow_ipc::root_as_footer(&file[file.len() - 10 - footer_len..file.len() - 10]).unwrap();
    let decoder = arrow_ipc::reader::FileDecoder::new(schema.clone(), footer.version())
        .with_require_alignment(true);
    let block = footer.recordBatches().unwrap().get(0);
    let block_len = block.bodyLength() as usize + block.metaDataLength() as usize;
    let data = buffer.slice_with_length(block.offset() as usize, block_len);
    let mapped = decoder.read_record_batch(block, &data).unwrap().unwrap();
    assert_eq!(mapped, batch);
    let list = mapped
        .column(0)
        .as_any()
        .downcast_ref::<LargeListViewArray>()
        .unwrap();
    let items = list.values().to_data().child_data()[0].buffers()[0].as_ptr() as usize;
    let start = buffer.as_ptr() as usize;
    assert!(items >= start && items < start + buffer.len());
    let reader = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(file), None).unwrap();
    let back: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0], batch);
    assert_eq!(
        back[0].schema().field(0).data_type(),
        view.field("x").data_type()
    );
}

#[test]
fn errors_name_levels_and_counts() {
    let x = LodTensor::from_lengths::<Int32Type>(&[vec![2, 2]], vec![1, 2, 3, 4], vec![]).unwrap();
    let y = Lod::try_from_lengths(&[vec![1, 1, 1]]).unwrap();
    let e = sequence_expand(&x, &y, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sequence_expand: level 0: found 2 sequences (or rows), expected 3"
    );
    let e = sequence_expand(&x, &y, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sequence_expand: ref_level 1 does not exist (y has 1 level; expected -1 or 0..1)"
    );
    assert!(matches!(
        sequence_expand(&x, &y, -2).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::RefLevel {
            ref_level: -2,
            ..
        }))
    ));
    assert!(matches!(
        sequence_expand(&x, Lod::default(), -1).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::RefLevel {
            levels: 0,
            ..
        }))
    ));
    let two = LodTensor::from_lengths::<Int32Type>(&[vec![1], vec![4]], vec![1, 2, 3, 4], vec![])
        .unwrap();
    let e = sequence_expand(&two, &y, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sequence_expand: input has 2 LoD levels, expected at most 1"
    );
    let e = sequence_expand_as(&x, &y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "sequence_expand_as: level 0: found 4 sequences (or rows), expected 3"
    );
    assert!(matches!(
        sequence_expand_as(&x, two.lod()).map_err(Error::into_kind),
        Err(ErrorKind::Unsupported(UnsupportedError::TooManyLevels {
            found: 2,
            ..
        }))
    ));
    assert!(matches!(
        sequence_expand_as(&x, Lod::default()).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds { .. }))
    ));
}

/// Paddle's `sequence_expand_as` case 2: x.data = [[a, b], [c, d], [e, f]], y.lod =
/// [[0, 2, 3, 6]] → out.lod = [[0, 2, 3, 6]], out.data = [[a, b], [a, b], [c, d], [e, f],
/// [e, f], [e, f]].
#[test]
fn expand_as_paddle_case_2() {
    let x = plain::<Int32Type>(vec![1, 2, 3, 4, 5, 6], vec![2]);
    let y = Lod::try_from_offsets(&[vec![0, 2, 3, 6]]).unwrap();
    let out = sequence_expand_as(&x, &y).unwrap();
    assert_eq!(out.lod().offsets(), vec![vec![0, 2, 3, 6]]);
    assert_eq!(
        out.typed_values::<Int32Type>().unwrap(),
        &[1, 2, 1, 2, 3, 4, 5, 6, 5, 6, 5, 6]
    );
}

#[test]
fn booleans_expand_too() {
    let x = LodTensor::try_new(
        Lod::try_from_lengths(&[vec![2, 1]]).unwrap(),
        Values::try_new(
            Arc::new(arrow_array::BooleanArray::from(vec![true, false, true])),
            vec![],
        )
        .unwrap(),
    )
    .unwrap();
    let out = sequence_expand(&x, Lod::try_from_lengths(&[vec![2, 0]]).unwrap(), 0).unwrap();
    let b = out.values().booleans().unwrap();
    assert_eq!(
        b.iter().map(Option::unwrap).collect::<Vec<_>>(),
        vec![true, false, true, false]
    );
    assert_eq!(out.lod().lengths(), vec![vec![2, 2]]);
}

proptest! {
    /// Against the model: the sentences of each document of x (its level 1 in view, as
    /// a 1-level tensor) repeated per y's level-0 lengths.
    #[test]
    fn expand_matches_the_model(
        docs in model::nested(),
        skip in 0usize..3,
        repeats in prop::collection::vec(0usize..4, 0..30),
    ) {
        let t = model::tensor(&docs, skip);
        // x: the sentences (1 level, sliced: offsets start past 0 when skip > 0).
        let x = t.drop_outer_levels(1).unwrap();
        let sentences: Vec<Vec<f64>> = docs.iter().flatten().cloned().collect();
        let n = sentences.len();
        let repeats: Vec<usize> = (0..n).map(|i| repeats.get(i).copied().unwrap_or(1)).collect();
        let y = Lod::try_from_lengths(std::slice::from_ref(&repeats)).unwrap();
        let out = sequence_expand(&x, &y, 0).unwrap();
        let mut want_lengths = Vec::new();
        let mut want = Vec::new();
        for (s, &r) in sentences.iter().zip(&repeats) {
            for _ in 0..r {
                want_lengths.push(s.len());
                want.extend_from_slice(s);
            }
        }
        prop_assert_eq!(out.lod().lengths(), vec![want_lengths]);
        prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
        // Rows of a plain tensor, expanded as the model says.
        let rows = t.drop_outer_levels(2).unwrap();
        let items: Vec<f64> = sentences.iter().flatten().copied().collect();
        let rep: Vec<usize> = (0..items.len()).map(|i| i % 3).collect();
        let out = sequence_expand(&rows, Lod::try_from_lengths(std::slice::from_ref(&rep)).unwrap(), -1).unwrap();
        let want: Vec<f64> = items.iter().zip(&rep).flat_map(|(&v, &r)| std::iter::repeat_n(v, r)).collect();
        prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
        let out = sequence_expand_as(&rows, Lod::try_from_lengths(std::slice::from_ref(&rep)).unwrap()).unwrap();
        prop_assert_eq!(out.typed_values::<Float64Type>().unwrap(), &want[..]);
        prop_assert_eq!(out.lod().lengths(), vec![rep]);
    }
}
