//! Property tests of the core against the nested-`Vec` model: Arrow round trips, slices,
//! zero-copy.

use crate::common::{Case, Node, case};
use lodtensor::ErrorKind;
use lodtensor::{LodTensor, OffsetWidth};
use proptest::prelude::*;

/// The tensor the model `rows` describe, with the case's dtype and shape.
fn model(case: &Case, rows: Vec<Node>, levels: usize) -> LodTensor {
    Case {
        rows,
        levels,
        ..case.clone()
    }
    .tensor()
}

/// Every node at `level`, in order.
fn nodes_at(rows: &[Node], level: usize) -> Vec<Node> {
    if level == 0 {
        return rows.to_vec();
    }
    let children: Vec<Node> = rows
        .iter()
        .flat_map(|n| match n {
            Node::Seq(c) => c.clone(),
            Node::Elem(_) => vec![],
        })
        .collect();
    nodes_at(&children, level - 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lengths_and_offsets_round_trip(case in case()) {
        let t = case.tensor();
        let (lengths, _) = Case::flatten(&case.rows, case.levels);
        prop_assert_eq!(t.lod().lengths(), lengths.clone());
        let again = lodtensor::Lod::try_from_offsets(&t.lod().offsets()).unwrap();
        prop_assert_eq!(again.lengths(), lengths);
        prop_assert!(t.lod().levels().iter().all(|o| o.width() == case.width));
    }

    #[test]
    fn arrow_round_trip_is_the_identity_without_copies(case in case()) {
        let t = case.tensor();
        let array = t.to_arrow();
        prop_assert_eq!(array.len(), t.num_rows());
        let back = LodTensor::try_from_arrow(&t.arrow_field("x"), array.as_ref()).unwrap();
        prop_assert_eq!(&back, &t);
        prop_assert_eq!(back.values().as_ptr(), t.values().as_ptr());
        for (a, b) in back.lod().levels().iter().zip(t.lod().levels()) {
            prop_assert_eq!(a.as_ptr(), b.as_ptr());
            prop_assert_eq!(a.width(), b.width());
        }
    }

    #[test]
    fn row_slices_agree_with_the_model(case in case(), a in 0usize..8, b in 0usize..8) {
        let t = case.tensor();
        let n = case.rows.len();
        let (a, b) = (a.min(n).min(b.min(n)), b.min(n).max(a.min(n)));
        let s = t.slice_rows(a..b).unwrap();
        prop_assert_eq!(&s, &model(&case, case.rows[a..b].to_vec(), case.levels));
        // The view survives Arrow both ways, still without a copy, and rebases exactly.
        let back = LodTensor::try_from_arrow(&s.arrow_field("x"), s.to_arrow().as_ref()).unwrap();
        prop_assert_eq!(&back, &s);
        let (p, base) = (back.values().as_ptr() as usize, t.values().as_ptr() as usize);
        let bytes = t.values().items().get_buffer_memory_size();
        prop_assert!(p >= base && p <= base + bytes);
        let rebased = s.rebased();
        prop_assert!(rebased.lod().is_zero_based());
        prop_assert_eq!(&rebased, &s);
        prop_assert!(t.slice_rows(a..n + 1).is_err());
    }

    #[test]
    fn sequence_slices_agree_with_the_model(case in case(), level in 0usize..4, j in 0usize..12) {
        // Not every case has the level asked for: those have nothing to check.
        if level >= case.levels {
            return Ok(());
        }
        let t = case.tensor();
        let nodes = nodes_at(&case.rows, level);
        match t.slice_sequence(level, j) {
            Ok(s) => {
                prop_assert!(j < nodes.len());
                prop_assert_eq!(&s, &model(&case, vec![nodes[j].clone()], case.levels - level));
                let elements = t.lod().sequence_elements(level, j).unwrap();
                prop_assert_eq!(s.elements(), elements);
            }
            Err(e) => {
                prop_assert!(j >= nodes.len());
                let is_out_of_bounds = matches!(e.kind(), ErrorKind::Argument(lodtensor::ArgumentError::SequenceOutOfBounds { .. }));
                prop_assert!(is_out_of_bounds);
            }
        }
    }

    #[test]
    fn slices_of_slices_agree_with_the_model(case in case(), a in 0usize..6, level in 0usize..4, j in 0usize..6) {
        if level >= case.levels || a >= case.rows.len() {
            return Ok(());
        }
        let t = case.tensor().slice_rows(a..case.rows.len()).unwrap();
        let rows = case.rows[a..].to_vec();
        let nodes = nodes_at(&rows, level);
        if j < nodes.len() {
            let s = t.slice_sequence(level, j).unwrap();
            prop_assert_eq!(&s, &model(&case, vec![nodes[j].clone()], case.levels - level));
        }
    }

    #[test]
    fn offset_width_changes_keep_the_lod(case in case()) {
        let t = case.tensor();
        let other = if case.width == OffsetWidth::I64 { OffsetWidth::I32 } else { OffsetWidth::I64 };
        let lod = t.lod().clone().with_offset_width(other).unwrap();
        prop_assert_eq!(&lod, t.lod());
        prop_assert!(lod.levels().iter().all(|o| o.width() == other));
    }
}
