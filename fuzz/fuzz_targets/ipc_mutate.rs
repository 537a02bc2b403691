//! A random valid dataset, written by `DatasetWriter`, then a few bytes of the file
//! changed as the input says, and the changed bytes opened (from memory) and read in full.
//! Without changes the file must map and read back as the dataset written.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Column, DType, Dataset, OffsetWidth};
use lodtensor_fuzz::{open_bytes, read_everything, scratch_dir, tensor_of};

/// One change to the written file.
#[derive(Arbitrary, Debug)]
enum Change {
    /// Sets the byte at a position (taken modulo the file's length).
    Set(u32, u8),
    /// Xors the byte at a position.
    Xor(u32, u8),
    /// Overwrites 8 bytes with a little-endian integer (offsets, lengths, counts).
    Int(u32, i64),
    /// Overwrites 4 bytes with a little-endian integer (flatbuffer offsets and sizes).
    Int32(u32, i32),
    /// Cuts the file at a position.
    Truncate(u32),
}

#[derive(Debug)]
struct Input {
    dataset: Dataset,
    options: WriteOptions,
    changes: Vec<Change>,
}

fn column(u: &mut Unstructured, index: usize, rows: usize) -> Result<Option<Column>> {
    let levels = u.int_in_range(0..=3)?;
    let dtype = *u.choose(&DType::ALL)?;
    let dims = u.int_in_range(0..=2)?;
    let shape = (0..dims)
        .map(|_| u.int_in_range(1..=3))
        .collect::<Result<Vec<usize>>>()?;
    let width = if u.arbitrary()? {
        OffsetWidth::I64
    } else {
        OffsetWidth::I32
    };
    // A 0-level column has one element per row; level k has one length per sequence of
    // level k - 1; the last level's total is the number of elements.
    let mut lengths: Vec<Vec<usize>> = Vec::new();
    let mut count = rows;
    for _ in 0..levels {
        let level = (0..count)
            .map(|_| u.int_in_range(0..=4))
            .collect::<Result<Vec<usize>>>()?;
        count = level.iter().sum();
        lengths.push(level);
    }
    let items = count * shape.iter().product::<usize>();
    let values = (0..items)
        .map(|_| u.arbitrary::<i64>())
        .collect::<Result<Vec<i64>>>()?;
    Ok(tensor_of(&lengths, dtype, shape, &values, width)
        .map(|t| Column::new(format!("c{index}"), t)))
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let rows = u.int_in_range(0..=6)?;
        let columns = u.int_in_range(1..=3)?;
        let mut cols = Vec::new();
        for i in 0..columns {
            if let Some(c) = column(u, i, rows)? {
                cols.push(c);
            }
        }
        let dataset = Dataset::try_new(cols).map_err(|_| arbitrary::Error::IncorrectFormat)?;
        let options = WriteOptions::default()
            .with_batch_bytes(u.int_in_range(1..=512)?)
            .with_offset_width(if u.arbitrary()? {
                OffsetWidth::I64
            } else {
                OffsetWidth::I32
            });
        let changes = u
            .arbitrary_iter()?
            .take(8)
            .collect::<Result<Vec<Change>>>()?;
        Ok(Input {
            dataset,
            options,
            changes,
        })
    }
}

fuzz_target!(|input: Input| {
    let path = scratch_dir().join("mutate.arrow");
    let mut writer = DatasetWriter::create(&path, input.options).expect("creating the file");
    writer
        .write(&input.dataset)
        .expect("a valid dataset writes");
    writer.finish().expect("finishing the file");
    let mut bytes = std::fs::read(&path).expect("reading the file back");
    if input.changes.is_empty() {
        let file = MappedDataset::open(&path).expect("a written file opens");
        read_everything(&file);
        let chunks = file.rows(0..file.num_rows()).expect("every row");
        let mut row = 0;
        for chunk in chunks {
            let expected = input
                .dataset
                .slice_rows(row..row + chunk.num_rows())
                .expect("rows of the dataset");
            assert_eq!(chunk, expected);
            row += chunk.num_rows();
        }
        assert_eq!(row, input.dataset.num_rows());
        return;
    }
    for change in &input.changes {
        if bytes.is_empty() {
            break;
        }
        let at = |p: u32, n: usize| (p as usize % bytes.len()).min(bytes.len().saturating_sub(n));
        match *change {
            Change::Set(p, v) => {
                let i = at(p, 1);
                bytes[i] = v;
            }
            Change::Xor(p, v) => {
                let i = at(p, 1);
                bytes[i] ^= v;
            }
            Change::Int(p, v) if bytes.len() >= 8 => {
                let i = at(p, 8);
                bytes[i..i + 8].copy_from_slice(&v.to_le_bytes());
            }
            Change::Int32(p, v) if bytes.len() >= 4 => {
                let i = at(p, 4);
                bytes[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            Change::Truncate(p) => {
                let len = p as usize % bytes.len();
                bytes.truncate(len);
            }
            _ => {}
        }
    }
    if let Ok(file) = open_bytes(&bytes) {
        read_everything(&file);
    }
});
