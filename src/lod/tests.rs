use super::*;
use crate::error::{ArgumentError, DataError, Error, ErrorKind};

fn example() -> Lod {
    Lod::try_from_lengths(&[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]).unwrap()
}

/// The 3-level example of the earlier design doc: one batch of the three articles.
fn three_levels() -> Lod {
    Lod::try_from_lengths(&[vec![3], vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]).unwrap()
}

#[test]
fn lengths_to_offsets_and_back() {
    let lod = example();
    assert_eq!(
        lod.offsets(),
        vec![vec![0, 3, 4, 6], vec![0, 3, 5, 9, 10, 12, 15]]
    );
    let again = Lod::try_from_offsets(&lod.offsets()).unwrap();
    assert_eq!(again.lengths(), vec![vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]]);
    assert_eq!(lod.elements(), 0..15);
    assert_eq!(lod.num_rows(), Some(3));
}

#[test]
fn absolute_offsets_as_in_the_design_doc() {
    // "0 9 10 / 0 3 5 9 10 12", plus the closing offsets.
    assert_eq!(
        example().absolute_offsets(),
        vec![vec![0, 9, 10, 15], vec![0, 3, 5, 9, 10, 12, 15]]
    );
    // The 3-level walkthrough: the third element of level 2 spans words 4..6 of
    // level 2 and elements 10..15.
    let lod = three_levels();
    assert_eq!(lod.sequence_elements(1, 2).unwrap(), 10..15);
    assert_eq!(lod.sequence_children(1, 2).unwrap(), 4..6);
}

#[test]
fn branch_slices_of_the_design_doc() {
    let lod = example();
    // The <2>-slice: "10 15 / 10 12 15".
    let (level, index) = lod.branch_position(&[2]).unwrap();
    let slice = lod.slice_sequence(level, index).unwrap();
    assert_eq!(
        slice.absolute_offsets(),
        vec![vec![10, 15], vec![10, 12, 15]]
    );
    assert_eq!(slice.lengths(), vec![vec![2], vec![2, 3]]);
    // The <2,0>-slice: "10 12".
    let (level, index) = lod.branch_position(&[2, 0]).unwrap();
    assert_eq!((level, index), (1, 4));
    let slice = lod.slice_sequence(level, index).unwrap();
    assert_eq!(slice.absolute_offsets(), vec![vec![10, 12]]);
    // The same, taken from the <2>-slice.
    let outer = lod.slice_sequence(0, 2).unwrap();
    let (level, index) = outer.branch_position(&[0, 0]).unwrap();
    assert_eq!(outer.sequence_elements(level, index).unwrap(), 10..12);
    assert!(matches!(
        lod.branch_position(&[2, 2]).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
            level: 1,
            index: 2,
            len: 2
        }))
    ));
}

#[test]
fn level_sequence_slices_of_the_earlier_design_doc() {
    let lod = three_levels();
    // The <2,1>-slice: "2 / ||".
    let s = lod.slice_sequence(2, 1).unwrap();
    assert_eq!(s.lengths(), vec![vec![2]]);
    assert_eq!(s.elements(), 3..5);
    // The <1,2>-slice: "2 / 2 3 / || |||".
    let s = lod.slice_sequence(1, 2).unwrap();
    assert_eq!(s.lengths(), vec![vec![2], vec![2, 3]]);
    assert_eq!(s.elements(), 10..15);
    // Its <1,1>-slice: "3 / |||".
    let s = s.slice_sequence(1, 1).unwrap();
    assert_eq!(s.lengths(), vec![vec![3]]);
    assert_eq!(s.elements(), 12..15);
}

#[test]
fn row_slices_are_views() {
    let lod = example();
    let s = lod.slice_rows(1..3).unwrap();
    assert_eq!(s.lengths(), vec![vec![1, 2], vec![1, 2, 3]]);
    assert_eq!(s.offsets(), vec![vec![3, 4, 6], vec![9, 10, 12, 15]]);
    assert_eq!(s.elements(), 9..15);
    assert_eq!(s.num_sequences(1).unwrap(), 3);
    assert_eq!(s.sequence_elements(1, 0).unwrap(), 9..10);
    assert_eq!(s.levels()[1].as_ptr(), lod.levels()[1].as_ptr());
    assert!(!s.is_zero_based());
    let (rebased, elements) = s.rebased();
    assert_eq!(rebased.offsets(), vec![vec![0, 1, 3], vec![0, 1, 3, 6]]);
    assert_eq!(elements, 9..15);
    assert!(rebased.is_zero_based());
    assert_eq!(rebased, s);
    let empty = lod.slice_rows(2..2).unwrap();
    assert_eq!(empty.lengths(), vec![Vec::<usize>::new(), vec![]]);
    assert_eq!(empty.elements(), 10..10);
}

#[test]
fn empty_sequences_are_valid() {
    let lod = Lod::try_from_lengths(&[vec![0, 2, 0], vec![0, 3]]).unwrap();
    assert_eq!(lod.offsets(), vec![vec![0, 0, 2, 2], vec![0, 0, 3]]);
    assert_eq!(lod.sequence_elements(0, 0).unwrap(), 0..0);
    assert_eq!(lod.sequence_elements(0, 1).unwrap(), 0..3);
}

#[test]
fn i32_offsets_on_request() {
    let lod = Lod::try_from_lengths_with_width(
        &[vec![3, 1, 2], vec![3, 2, 4, 1, 2, 3]],
        OffsetWidth::I32,
    )
    .unwrap();
    assert!(lod.levels().iter().all(|o| o.width() == OffsetWidth::I32));
    assert_eq!(lod, example());
    let wide = lod.with_offset_width(OffsetWidth::I64).unwrap();
    assert_eq!(wide.levels()[1].to_vec(), vec![0, 3, 5, 9, 10, 12, 15]);
    let big = Lod::try_from_lengths(&[vec![usize::MAX / 4, usize::MAX / 4]]);
    assert!(big.is_ok() == (usize::MAX / 2 <= i64::MAX as usize));
    let err = Lod::try_from_lengths_with_width(&[vec![1 << 31]], OffsetWidth::I32).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::Data(DataError::OffsetOverflow {
            level: 0,
            index: 1,
            width: "int32",
            ..
        })
    ));
}

#[test]
fn each_rule_has_its_error() {
    let empty: &[i64] = &[];
    assert!(matches!(
        Lod::try_from_offsets(&[empty]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::EmptyLevel { level: 0 }))
    ));
    assert!(matches!(
        Lod::try_from_offsets(&[vec![0, 2], vec![-1, 0, 1]]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::NegativeOffset {
            level: 1,
            offset: -1
        }))
    ));
    assert!(matches!(
        Lod::try_from_offsets(&[vec![0, 3, 2]]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::DecreasingOffset {
            level: 0,
            index: 2,
            offset: 2,
            previous: 3
        }))
    ));
    assert!(matches!(
        Lod::try_from_offsets(&[vec![0, 3, 4, 6], vec![0, 3, 5, 9]]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::LevelEndMismatch {
            level: 0,
            last_offset: 6,
            sequences: 3
        }))
    ));
    assert!(matches!(
        Lod::try_from_lengths(&[vec![1, 1], vec![3]]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::LevelEndMismatch {
            level: 0,
            last_offset: 2,
            sequences: 1
        }))
    ));
    assert!(matches!(
        Lod::try_from_lengths(&[vec![usize::MAX, 1]]).map_err(Error::into_kind),
        Err(ErrorKind::Data(DataError::OffsetOverflow {
            level: 0,
            index: 2,
            width: "usize",
            ..
        }))
    ));
}

#[test]
fn each_argument_check_has_its_error() {
    assert!(matches!(
        example().num_sequences(2).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 2,
            levels: 2
        }))
    ));
    assert!(matches!(
        example().sequence_elements(1, 6).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
            level: 1,
            index: 6,
            len: 6
        }))
    ));
    assert!(matches!(
        example()
            .sequence_elements(1, usize::MAX)
            .map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
            level: 1,
            index: usize::MAX,
            len: 6
        }))
    ));
    assert!(matches!(
        example().slice_rows(2..4).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds {
            start: 2,
            end: 4,
            len: 3
        }))
    ));
    assert!(matches!(
        Lod::default().slice_rows(0..0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 0,
            levels: 0
        }))
    ));
}
