//! Rows read by ranges against the same rows of the file as arrow-ipc reads it whole: every
//! supported type, with and without nulls, nested lists, runs anywhere in a batch; the bytes
//! read; and every changed byte of the file an error or arrays, never a panic.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, FixedSizeListBuilder, Float32Builder, Int64Builder, LargeListBuilder,
    ListBuilder, StringBuilder,
};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray, make_array};
use arrow_schema::{DataType, Field};

use super::*;
use crate::io::ipc_lengths::{Tail, read_tail, tail_range};

/// A small seeded generator (xorshift): this layer does not use the crate's random one.
struct Draws(u64);

impl Draws {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Rows of every supported kind, some null, some empty: 0..n, seeded.
fn batch(n: usize, seed: u64) -> RecordBatch {
    let mut rng = Draws(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut pick = |m: u64| rng.next_u64() % m;
    let mut ids = Int64Builder::new();
    let mut flags = BooleanBuilder::new();
    let mut names = StringBuilder::new();
    let mut tokens = LargeListBuilder::new(ListBuilder::new(FixedSizeListBuilder::new(
        Float32Builder::new(),
        2,
    )));
    let mut pairs = StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int64, true)),
        Arc::new(arrow_array::Int64Array::from(
            (0..n as i64).collect::<Vec<_>>(),
        )) as ArrayRef,
    )]);
    for row in 0..n {
        ids.append_option((pick(5) != 0).then_some(row as i64 * 3));
        flags.append_option((pick(4) != 0).then_some(pick(2) == 0));
        match pick(6) {
            0 => names.append_null(),
            k => names.append_value("x".repeat(k as usize * row % 17)),
        }
        append_sentences(&mut tokens, row, &mut pick);
        tokens.append(pick(7) != 0);
    }
    pairs = pairs.slice(0, n);
    RecordBatch::try_from_iter(vec![
        ("ids", Arc::new(ids.finish()) as ArrayRef),
        ("flags", Arc::new(flags.finish())),
        ("names", Arc::new(names.finish())),
        ("tokens", Arc::new(tokens.finish())),
        ("pairs", Arc::new(pairs)),
    ])
    .unwrap()
}

/// An IPC file of `batches`, as arrow-ipc writes it.
fn file(batches: &[RecordBatch]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut w = arrow_ipc::writer::FileWriter::try_new(&mut bytes, &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    bytes
}

/// The bytes of `r` in `bytes` (none past its end).
fn slice(bytes: &[u8], r: Range<u64>) -> &[u8] {
    bytes
        .get(r.start as usize..r.end as usize)
        .unwrap_or_default()
}

/// The footer of the file `bytes`, read by ranges.
fn footer(bytes: &[u8]) -> Result<FileFooter> {
    let len = bytes.len() as u64;
    match read_tail(len, slice(bytes, tail_range(len)))? {
        Tail::Footer(f) => Ok(f),
        Tail::Longer(r) => match read_tail(len, slice(bytes, r))? {
            Tail::Footer(f) => Ok(f),
            Tail::Longer(_) => Err(invalid("the footer moved")),
        },
    }
}

/// The footer and every batch's layout, read from `bytes` by ranges.
fn layouts(bytes: &[u8]) -> Result<Vec<BatchLayout>> {
    let footer = footer(bytes)?;
    let slice = |r: Range<u64>| slice(bytes, r);
    (footer.message_ranges().into_iter().enumerate())
        .map(|(i, r)| {
            footer
                .layout(i, slice(r))?
                .ok_or_else(|| invalid("not by rows"))
        })
        .collect()
}

/// `runs` of `batch`es' rows read by ranges of `bytes`: the arrays, the ranges' bytes and
/// the rounds.
fn read(
    bytes: &[u8],
    layouts: &[BatchLayout],
    runs: &[(usize, Range<usize>)],
) -> Result<(Vec<Vec<ArrayData>>, u64, usize)> {
    read_marked(bytes, layouts, runs, &|_, _| Vec::new())
}

/// The marks of a run of a batch's rows, per column.
type MarksOf<'a> = &'a dyn Fn(usize, &Range<usize>) -> Vec<Option<Marks>>;

/// [`read`] with the marks `marks` gives each run (its batch, its rows).
fn read_marked(
    bytes: &[u8],
    layouts: &[BatchLayout],
    runs: &[(usize, Range<usize>)],
    marks: MarksOf<'_>,
) -> Result<(Vec<Vec<ArrayData>>, u64, usize)> {
    let layout = |b: usize| {
        layouts
            .get(b)
            .ok_or_else(|| invalid(format!("no batch {b}")))
    };
    let runs = (runs.iter())
        .map(|(b, r)| {
            Ok(Run {
                file: 0,
                layout: layout(*b)?,
                rows: r.clone(),
                wanted: r.len(),
                marks: marks(*b, r),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (mut read, mut rounds) = (0, 0);
    let mut fetch = |wanted: &[(usize, Range<u64>, u64)]| {
        rounds += 1;
        (wanted.iter())
            .map(|(_, r, _)| {
                read += r.end - r.start;
                let got = bytes.get(r.start as usize..r.end as usize);
                got.map(Bytes::copy_from_slice)
                    .ok_or_else(|| invalid("past the file"))
            })
            .collect()
    };
    let columns: Vec<usize> = (0..layout(0)?.fields.len()).collect();
    let arrays = read_rows(&runs, &columns, &mut fetch, &|_, e| e)?;
    Ok((arrays, read, rounds))
}

#[test]
fn runs_read_by_ranges_are_the_rows_of_the_file() {
    let batches = [batch(40, 1), batch(1, 2), batch(23, 3)];
    let bytes = file(&batches);
    let layouts = layouts(&bytes).unwrap();
    let mut rng = Draws(9);
    let mut runs = vec![
        (0, 0..40),
        (1, 0..1),
        (2, 22..23),
        (0, 7..7),
        (0, 8..9),
        (2, 3..17),
    ];
    for _ in 0..60 {
        let b = [0, 2][(rng.next_u64() % 2) as usize];
        let n = batches[b].num_rows() as u64;
        let start = rng.next_u64() % n;
        let end = start + rng.next_u64() % (n - start + 1);
        runs.push((b, start as usize..end as usize));
    }
    let (arrays, _, rounds) = read(&bytes, &layouts, &runs).unwrap();
    // validity, values and the first offsets; the strings' bytes and the sentences'
    // offsets; the words.
    assert_eq!(rounds, 3);
    for ((b, rows), run) in runs.iter().zip(&arrays) {
        for (c, got) in run.iter().enumerate() {
            let expected = batches[*b].column(c).slice(rows.start, rows.len());
            assert_eq!(
                make_array(got.clone()).as_ref(),
                expected.as_ref(),
                "batch {b} rows {rows:?} column {c}"
            );
        }
    }
}

#[test]
fn a_run_reads_little_more_than_its_rows() {
    let batches = [batch(400, 4)];
    let bytes = file(&batches);
    let layouts = layouts(&bytes).unwrap();
    let (_, whole, _) = read(&bytes, &layouts, &[(0, 0..400)]).unwrap();
    let (_, tenth, _) = read(&bytes, &layouts, &[(0, 200..240)]).unwrap();
    // A tenth of the rows: about a tenth of the bytes (a byte of bits, an offset more).
    assert!(tenth * 8 < whole, "{tenth} of {whole} bytes");
}

#[test]
fn rows_past_a_batch_are_refused() {
    let bytes = file(&[batch(5, 5)]);
    let layouts = layouts(&bytes).unwrap();
    assert!(read(&bytes, &layouts, &[(0, 3..6)]).is_err());
}

/// Every byte of the file changed in turn: an error or arrays, never a panic or a read
/// outside the file.
#[test]
fn every_changed_byte_gives_an_error_or_arrays() {
    let bytes = file(&[batch(6, 6)]);
    for i in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut changed = bytes.clone();
            changed[i] ^= flip;
            if let Ok(layouts) = layouts(&changed) {
                let _ = read(&changed, &layouts, &[(0, 1..5), (0, 0..6)]);
            }
        }
    }
}

/// The index's marks (of the file as written) over a file with any byte changed, and the
/// file as written under marks with any entry moved by one: an error or arrays that pass
/// Arrow's full validation, never a panic. The top level's offsets are the marks (not
/// read); the levels under it are read and checked against them.
#[test]
fn changed_bytes_or_lying_marks_give_an_error_or_valid_arrays() {
    let batches = [plain_batch(7, 5)];
    let bytes = file(&batches);
    let runs = [(0, 1..6), (0, 0..7)];
    let marks = |b: usize, rows: &Range<usize>| vec![None, Some(marks_of(&batches[b], rows))];
    for i in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut changed = bytes.clone();
            changed[i] ^= flip;
            let Ok(layouts) = layouts(&changed) else {
                continue;
            };
            if let Ok((arrays, _, _)) = read_marked(&changed, &layouts, &runs, &marks) {
                for array in arrays.iter().flatten() {
                    array.validate_full().unwrap();
                }
            }
        }
    }
    // The file as written, marks with any entry one more or one less: the same.
    let layouts = layouts(&bytes).unwrap();
    let truth = marks_of(&batches[0], &(0..7));
    for (level, entries) in truth.at.iter().enumerate() {
        for i in 0..entries.len() {
            for delta in [1isize, -1] {
                let mut lying = truth.clone();
                let entry = &mut lying.at[level][i];
                let Some(moved) = entry.checked_add_signed(delta) else {
                    continue;
                };
                *entry = moved;
                let given = |_: usize, _: &Range<usize>| vec![None, Some(lying.clone())];
                if let Ok((arrays, _, _)) = read_marked(&bytes, &layouts, &[(0, 0..7)], &given) {
                    arrays
                        .iter()
                        .flatten()
                        .for_each(|a| a.validate_full().unwrap());
                }
            }
        }
    }
}

/// Appends a document's sentences of `[row, t]` words (their numbers drawn by `pick`).
fn append_sentences(
    tokens: &mut LargeListBuilder<ListBuilder<FixedSizeListBuilder<Float32Builder>>>,
    row: usize,
    pick: &mut impl FnMut(u64) -> u64,
) {
    for _ in 0..pick(4) {
        let sentences = tokens.values();
        for t in 0..pick(5) {
            let words = sentences.values();
            words.values().append_value(row as f32);
            words.values().append_value(t as f32);
            words.append(true);
        }
        sentences.append(true);
    }
}

/// Rows without nulls: ids, and tokens of two levels over pairs, as a LoD tensor column.
fn plain_batch(n: usize, seed: u64) -> RecordBatch {
    let mut rng = Draws(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut pick = |m: u64| rng.next_u64() % m;
    let mut tokens = LargeListBuilder::new(ListBuilder::new(FixedSizeListBuilder::new(
        Float32Builder::new(),
        2,
    )));
    for row in 0..n {
        append_sentences(&mut tokens, row, &mut pick);
        tokens.append(true);
    }
    let ids = arrow_array::Int64Array::from_iter_values(0..n as i64);
    RecordBatch::try_from_iter(vec![
        ("ids", Arc::new(ids) as ArrayRef),
        ("tokens", Arc::new(tokens.finish())),
    ])
    .unwrap()
}

/// The marks the lengths index gives of `rows` of `batch`'s tokens (column 1).
fn marks_of(batch: &RecordBatch, rows: &Range<usize>) -> Marks {
    use arrow_array::cast::AsArray;
    let outer = batch.column(1).as_list::<i64>();
    let inner = outer.values().as_list::<i32>();
    let (o0, o1) = (outer.value_offsets(), inner.value_offsets());
    let at0: Vec<usize> = (rows.start..=rows.end).collect();
    let at1: Vec<usize> = at0.iter().map(|&r| o0[r] as usize).collect();
    let at2: Vec<usize> = at1.iter().map(|&e| o1[e] as usize).collect();
    Marks {
        at: vec![at0, at1, at2],
        totals: vec![batch.num_rows(), inner.len(), inner.values().len()],
    }
}

#[test]
fn marked_runs_read_every_level_in_one_round_and_lying_marks_are_named() {
    let batches = [plain_batch(30, 7), plain_batch(12, 8)];
    let bytes = file(&batches);
    let layouts = layouts(&bytes).unwrap();
    let runs = vec![(0, 0..30), (0, 4..9), (1, 11..12), (0, 29..29), (1, 0..5)];
    let marks = |b: usize, rows: &Range<usize>| vec![None, Some(marks_of(&batches[b], rows))];
    let (arrays, _, rounds) = read_marked(&bytes, &layouts, &runs, &marks).unwrap();
    assert_eq!(rounds, 1);
    for ((b, rows), run) in runs.iter().zip(&arrays) {
        for (c, got) in run.iter().enumerate() {
            let expected = batches[*b].column(c).slice(rows.start, rows.len());
            assert_eq!(make_array(got.clone()).as_ref(), expected.as_ref());
        }
    }
    // The top level's offsets are the marks (not read): an index that says another
    // sentence count for a row, across a sentence of tokens, is named at the next level.
    let o1 = {
        use arrow_array::cast::AsArray;
        let outer = batches[0].column(1).as_list::<i64>();
        outer.values().as_list::<i32>().value_offsets().to_vec()
    };
    // A row edge whose first sentence has tokens: the lie moves the edge past them.
    let edge = |m: &Marks| {
        (1..m.at[1].len() - 1).find(|&i| {
            let s = m.at[1][i];
            s < m.at[1][i + 1] && o1[s] < o1[s + 1]
        })
    };
    let lying = |b: usize, rows: &Range<usize>| {
        let mut m = marks_of(&batches[b], rows);
        let i = edge(&m).unwrap();
        m.at[1][i] += 1;
        vec![None, Some(m)]
    };
    let err = read_marked(&bytes, &layouts, &[(0, 4..9)], &lying).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Format(crate::error::FormatError::ShardMismatch { field, .. })
            if field.starts_with("level 1: offset at index")),
        "{err}"
    );
    let deeper = |b: usize, rows: &Range<usize>| {
        let mut m = marks_of(&batches[b], rows);
        let i = (1..m.at[2].len() - 1)
            .find(|&i| m.at[2][i] < m.at[2][i + 1])
            .unwrap();
        m.at[2][i] += 1; // still non-decreasing
        vec![None, Some(m)]
    };
    let err = read_marked(&bytes, &layouts, &[(0, 0..30)], &deeper).unwrap_err();
    assert!(
        err.to_string().contains("level 1: offset at index"),
        "{err}"
    );
    // Totals that are not the batch's (entries the rows do not reach, or an offset base
    // other than 0): that level and those below read level by level, as without an index.
    for (level, expected_rounds) in [(1, 3), (2, 2)] {
        let longer = |b: usize, rows: &Range<usize>| {
            let mut m = marks_of(&batches[b], rows);
            m.totals[level] += 1;
            vec![None, Some(m)]
        };
        let (arrays, _, rounds) = read_marked(&bytes, &layouts, &runs, &longer).unwrap();
        assert_eq!(rounds, expected_rounds);
        let expected = batches[0].column(1).slice(4, 5);
        assert_eq!(make_array(arrays[1][1].clone()).as_ref(), expected.as_ref());
    }
}

/// A compressed record batch has no layout by rows; read whole from its block's bytes
/// alone it is the batch written, and every changed byte of its block gives an error or
/// arrays that pass Arrow's full validation, never a panic.
#[test]
fn a_compressed_batch_read_whole_is_the_batch_and_a_changed_byte_an_error_or_valid() {
    use crate::io::ipc_decode::decode_block;
    let batches = [plain_batch(9, 3), plain_batch(4, 4)];
    let options = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .unwrap();
    let mut bytes = Vec::new();
    let schema = batches[0].schema();
    let mut w =
        arrow_ipc::writer::FileWriter::try_new_with_options(&mut bytes, &schema, options).unwrap();
    batches.iter().for_each(|b| w.write(b).unwrap());
    w.finish().unwrap();
    drop(w);
    let footer = footer(&bytes).unwrap();
    let file = (footer.schema(), footer.version());
    let block_of = |i: usize| {
        let message = slice(&bytes, footer.message_ranges()[i].clone());
        assert!(footer.layout(i, message).unwrap().is_none());
        footer.whole(i, message).unwrap()
    };
    for (i, expected) in batches.iter().enumerate() {
        let whole = block_of(i);
        assert_eq!(whole.rows, expected.num_rows());
        let block = Buffer::from(slice(&bytes, whole.block.clone()).to_vec());
        let got = decode_block(&block, whole.meta as usize, file, None, i).unwrap();
        assert_eq!(got.columns(), expected.columns());
    }
    let whole = block_of(0);
    let block = slice(&bytes, whole.block.clone());
    for at in 0..block.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut changed = block.to_vec();
            changed[at] ^= flip;
            let changed = Buffer::from(changed);
            if let Ok(batch) = decode_block(&changed, whole.meta as usize, file, None, 0) {
                batch
                    .columns()
                    .iter()
                    .for_each(|c| c.to_data().validate_full().unwrap());
            }
        }
    }
}
