//! The sequence operators against PaddlePaddle 2.6.2's own outputs
//! (`tests/data/paddle_ops/make_vectors.py`): every case Paddle computes gives the same LoD,
//! shape and items here (floats bit for bit), every input Paddle rejects is rejected here
//! with a typed error, except the few cases listed in `DIVERGENCES`, each with its reason
//! and the behaviour checked instead.

use std::fs;
use std::path::PathBuf;

use arrow_array::BooleanArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, Int32Type, Int64Type};
use lodtensor::ops::{
    PoolType, context_project, sequence_enumerate, sequence_erase, sequence_first_step,
    sequence_last_step, sequence_mask_as, sequence_max_index, sequence_pool_any, sequence_reshape,
    sequence_scatter, sequence_softmax,
};
use lodtensor::{DType, Lod, LodTensor, Values};
use serde_json::Value;

/// Cases where this crate and Paddle 2.6.2 differ on purpose: (file, case, what is checked
/// instead, why).
const DIVERGENCES: &[(&str, &str, Expect, &str)] = &[
    (
        "sequence_softmax",
        "overflow",
        Expect::Stable,
        "Paddle's kernel does not subtract the maximum: exp overflows to NaN; the stable form is used instead",
    ),
    (
        "sequence_softmax",
        "float16",
        Expect::Accepted,
        "Paddle has no CPU float16 kernel; this computes in float32",
    ),
    (
        "sequence_scatter",
        "int32_ids",
        Expect::Accepted,
        "Paddle's CPU kernel reads ids as int64 only; int32 ids are widened here",
    ),
    (
        "sequence_scatter",
        "x_rank1",
        Expect::Rejected,
        "Paddle does not check ids: id 5 of a 1-item row writes into later rows; here ids must index their row",
    ),
    (
        "sequence_mask",
        "all_zero",
        Expect::Rejected,
        "Paddle gives rows of 0 items; elements of 0 items have no layout here",
    ),
    (
        "context_project",
        "float64",
        Expect::Accepted,
        "Paddle's im2col is written for float32 only; every numeric dtype works here",
    ),
    (
        "context_project",
        "stride2",
        Expect::NotExpressible,
        "Paddle rejects contextStride != 1; context_project has no stride argument",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Paddle rejects the input; this crate computes it.
    Accepted,
    /// Paddle computes the input; this crate rejects it.
    Rejected,
    /// Paddle's output has NaN where this crate's has the stable softmax.
    Stable,
    /// The case cannot be stated with this crate's arguments.
    NotExpressible,
}

fn cases(op: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/paddle_ops")
        .join(format!("{op}.json"));
    let json: Value = serde_json::from_str(&fs::read_to_string(&path).expect("vectors")).unwrap();
    assert_eq!(json["paddle"], "2.6.2", "{}", path.display());
    json["cases"].as_array().expect("cases").clone()
}

fn float(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            other => panic!("float {other:?}"),
        },
        v => v.as_f64().expect("number"),
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().expect("integer")
}

/// A Paddle tensor of the vectors as a `LodTensor`: dims `[N, rest..]` are `N` elements of
/// shape `rest`.
fn tensor(v: &Value) -> LodTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let shape = dims[1..].to_vec();
    let items = v["items"].as_array().unwrap();
    let values = match v["dtype"].as_str().unwrap() {
        "float32" => {
            Values::from_vec::<Float32Type>(items.iter().map(|i| float(i) as f32).collect(), shape)
        }
        "float64" => Values::from_vec::<Float64Type>(items.iter().map(float).collect(), shape),
        "float16" => Values::from_vec::<Float16Type>(
            items
                .iter()
                .map(|i| half::f16::from_f64(float(i)))
                .collect(),
            shape,
        ),
        "int32" => {
            Values::from_vec::<Int32Type>(items.iter().map(|i| int(i) as i32).collect(), shape)
        }
        "int64" => Values::from_vec::<Int64Type>(items.iter().map(int).collect(), shape),
        "bool" => Values::try_new(
            std::sync::Arc::new(BooleanArray::from(
                items
                    .iter()
                    .map(|i| i.as_bool().unwrap())
                    .collect::<Vec<_>>(),
            )),
            shape,
        ),
        other => panic!("dtype {other}"),
    }
    .unwrap();
    let lod: Vec<Vec<i64>> = v["lod"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_array().unwrap().iter().map(int).collect())
        .collect();
    LodTensor::try_new(Lod::try_from_offsets(&lod).unwrap(), values).unwrap()
}

/// The items of `t` as Paddle's JSON would hold them, floats by their bits.
fn items(t: &LodTensor) -> Vec<String> {
    let bits = |b: u64| format!("{b:#x}");
    match t.dtype() {
        DType::Float32 => t
            .typed_values::<Float32Type>()
            .unwrap()
            .iter()
            .map(|v| bits(u64::from(v.to_bits())))
            .collect(),
        DType::Float64 => t
            .typed_values::<Float64Type>()
            .unwrap()
            .iter()
            .map(|v| bits(v.to_bits()))
            .collect(),
        DType::Int32 => t
            .typed_values::<Int32Type>()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect(),
        DType::Int64 => t
            .typed_values::<Int64Type>()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect(),
        DType::Bool => t
            .values()
            .booleans()
            .unwrap()
            .iter()
            .map(|v| (v.unwrap() as i64).to_string())
            .collect(),
        other => panic!("dtype {other}"),
    }
}

/// Runs the case's op; the outputs by Paddle's names.
fn run(op: &str, case: &Value) -> lodtensor::Result<Vec<(&'static str, LodTensor)>> {
    let input = |name: &str| tensor(&case["inputs"][name]);
    let attr = |name: &str| int(&case["attrs"][name]);
    let x = input("X");
    Ok(match op {
        "sequence_softmax" => vec![("Out", sequence_softmax(&x)?)],
        "sequence_enumerate" => {
            vec![(
                "Out",
                sequence_enumerate(&x, attr("win_size") as usize, attr("pad_value"))?,
            )]
        }
        "sequence_erase" => {
            let tokens: Vec<i64> = case["attrs"]["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            vec![("Out", sequence_erase(&x, &tokens)?)]
        }
        "sequence_reshape" => vec![("Out", sequence_reshape(&x, attr("new_dim") as usize)?)],
        "sequence_scatter" => vec![(
            "Out",
            sequence_scatter(&x, &input("Ids"), &input("Updates"))?,
        )],
        "sequence_mask" => {
            let maxlen = usize::try_from(attr("maxlen")).ok();
            let dtype = match attr("out_dtype") {
                0 => DType::Bool,
                2 => DType::Int32,
                3 => DType::Int64,
                5 => DType::Float32,
                other => panic!("out_dtype {other}"),
            };
            vec![("Y", sequence_mask_as(&x, maxlen, dtype)?)]
        }
        "sequence_pool" => pool(&x, case)?,
        "context_project" => {
            let (start, length) = (
                attr("contextStart") as isize,
                attr("contextLength") as usize,
            );
            vec![("Out", context_project(&x, start, length)?)]
        }
        other => panic!("op {other}"),
    })
}

/// `sequence_pool` with `MAX` (and its `MaxIndex`), `FIRST` or `LAST` at the last level;
/// the named first/last-step entry points when the pad value is theirs (0).
fn pool(x: &LodTensor, case: &Value) -> lodtensor::Result<Vec<(&'static str, LodTensor)>> {
    let pad = float(&case["attrs"]["pad_value"]);
    let last = x.num_levels() - 1;
    Ok(match case["attrs"]["pooltype"].as_str().unwrap() {
        "MAX" => {
            let index = sequence_max_index(x, last)?;
            let out = sequence_pool_any(x, last, PoolType::Max, pad)?;
            // Paddle's MaxIndex is a plain int32 tensor.
            let index = LodTensor::try_new(
                Lod::default(),
                Values::from_vec::<Int32Type>(
                    index.iter().map(|&i| i as i32).collect(),
                    out.element_shape().to_vec(),
                )?,
            )?;
            vec![("Out", out), ("MaxIndex", index)]
        }
        "FIRST" if pad == 0.0 => vec![("Out", sequence_first_step(x)?)],
        "LAST" if pad == 0.0 => vec![("Out", sequence_last_step(x)?)],
        "FIRST" => vec![("Out", sequence_pool_any(x, last, PoolType::First, pad)?)],
        "LAST" => vec![("Out", sequence_pool_any(x, last, PoolType::Last, pad)?)],
        other => panic!("pooltype {other}"),
    })
}

fn check_case(op: &str, case: &Value) {
    let name = case["name"].as_str().unwrap();
    let divergence = DIVERGENCES
        .iter()
        .find(|d| d.0 == op && d.1 == name)
        .map(|d| d.2);
    if divergence == Some(Expect::NotExpressible) {
        assert!(
            case.get("error").is_some(),
            "{op} {name}: Paddle accepts it"
        );
        return;
    }
    let got = run(op, case);
    let Some(outputs) = case.get("outputs") else {
        let error = case["error"].as_str().unwrap();
        match divergence {
            Some(Expect::Accepted) => assert!(got.is_ok(), "{op} {name}: {got:?}"),
            None => assert!(
                got.is_err(),
                "{op} {name}: Paddle rejects it ({error}), this gives {got:?}"
            ),
            d => panic!("{op} {name}: {d:?} on a rejected case"),
        }
        return;
    };
    if divergence == Some(Expect::Rejected) {
        assert!(got.is_err(), "{op} {name}: {got:?}");
        return;
    }
    let got = got.unwrap_or_else(|e| panic!("{op} {name}: {e}"));
    for (out_name, t) in got {
        let want = tensor(&outputs[out_name]);
        assert_eq!(
            t.lod().offsets(),
            want.lod().offsets(),
            "{op} {name} {out_name}: LoD"
        );
        assert_eq!(t.shape(), want.shape(), "{op} {name} {out_name}: shape");
        assert_eq!(t.dtype(), want.dtype(), "{op} {name} {out_name}: dtype");
        if divergence == Some(Expect::Stable) {
            let (g, w) = (
                t.typed_values::<Float32Type>().unwrap(),
                want.typed_values::<Float32Type>().unwrap(),
            );
            for (g, w) in g.iter().zip(w) {
                assert!(
                    g.is_finite() && (w.is_nan() || (g - w).abs() < 1e-6),
                    "{op} {name}: {g} vs Paddle's {w}"
                );
            }
            assert!(
                w.iter().any(|w| w.is_nan()),
                "{op} {name}: Paddle's output has no NaN"
            );
            continue;
        }
        assert_eq!(items(&t), items(&want), "{op} {name} {out_name}: items");
    }
}

fn check(op: &str) {
    let cases = cases(op);
    assert!(cases.len() >= 5, "{op}: {} cases", cases.len());
    for case in &cases {
        check_case(op, case);
    }
    for d in DIVERGENCES.iter().filter(|d| d.0 == op) {
        assert!(
            cases.iter().any(|c| c["name"] == d.1),
            "{op}: no case {}",
            d.1
        );
    }
}

#[test]
fn sequence_softmax_matches_paddle() {
    check("sequence_softmax");
}

#[test]
fn sequence_enumerate_matches_paddle() {
    check("sequence_enumerate");
}

#[test]
fn sequence_erase_matches_paddle() {
    check("sequence_erase");
}

#[test]
fn sequence_reshape_matches_paddle() {
    check("sequence_reshape");
}

#[test]
fn sequence_scatter_matches_paddle() {
    check("sequence_scatter");
}

#[test]
fn sequence_mask_matches_paddle() {
    check("sequence_mask");
}

#[test]
fn sequence_pool_max_index_and_steps_match_paddle() {
    check("sequence_pool");
}

#[test]
fn context_project_matches_sequence_conv() {
    check("context_project");
}

/// The rank rules where lodtensor generalises Paddle 2.6.2 (docs/ops.md's table): Paddle
/// refuses a rank-1 `X` (`[N]`, it wants `[N, 1]`) for `sequence_enumerate` and
/// `sequence_erase`, and any rank but 2 for `sequence_reshape`; here a rank-1 `X` is
/// scalar elements (element shape `[]`), giving what the `[N, 1]` input gives, and a rank-3
/// `X` (`[N, 2, 3]`) is re-cut by its 6 items per element.
#[test]
fn rank_generalisations_give_what_the_paddle_shaped_input_gives() {
    use lodtensor::ops::{sequence_enumerate, sequence_erase, sequence_reshape};
    let ids = |shape: Vec<usize>| {
        LodTensor::from_lengths::<Int64Type>(&[vec![3, 2]], vec![1, 2, 3, 4, 5], shape).unwrap()
    };
    let (rank1, paddle) = (ids(vec![]), ids(vec![1]));
    let (a, b) = (
        sequence_enumerate(&rank1, 2, 0).unwrap(),
        sequence_enumerate(&paddle, 2, 0).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(
        a.typed_values::<Int64Type>().unwrap(),
        &[1, 2, 2, 3, 3, 0, 4, 5, 5, 0]
    );
    let (a, b) = (
        sequence_erase(&rank1, &[2, 5]).unwrap(),
        sequence_erase(&paddle, &[2, 5]).unwrap(),
    );
    assert_eq!(a.typed_values::<Int64Type>().unwrap(), &[1, 3, 4]);
    assert_eq!(a.lod(), b.lod());
    assert_eq!((a.element_shape(), b.element_shape()), (&[][..], &[1][..]));
    let items: Vec<f32> = (1..=24).map(|v| v as f32).collect();
    let rank3 =
        LodTensor::from_lengths::<Float32Type>(&[vec![2, 2]], items.clone(), vec![2, 3]).unwrap();
    let rank2 = LodTensor::from_lengths::<Float32Type>(&[vec![2, 2]], items, vec![6]).unwrap();
    let (a, b) = (
        sequence_reshape(&rank3, 4).unwrap(),
        sequence_reshape(&rank2, 4).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a.lod().lengths(), vec![vec![3, 3]]);
    assert_eq!(a.element_shape(), &[4]);
}
