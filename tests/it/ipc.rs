//! The IPC writer and mapped reader: round trips, zero-copy, random access, bad files,
//! crash safety.

use lodtensor::{ArgumentError, DataError, ErrorKind, FormatError, UnsupportedError};
use std::path::Path;

use crate::common::{case, example_dataset, inside};
use arrow_array::Array;
use arrow_array::types::{Float32Type, Int64Type};
use lodtensor::io::ipc_reader::MappedDataset;
use lodtensor::io::ipc_writer::{DatasetWriter, WriteOptions};
use lodtensor::{Column, Dataset, Error, Lod, LodTensor, Values};
use proptest::prelude::*;

fn write(path: &Path, datasets: &[Dataset], options: WriteOptions) {
    let mut w = DatasetWriter::create(path, options).unwrap();
    for d in datasets {
        w.write(d).unwrap();
    }
    w.finish().unwrap();
}

/// A dataset of one generated column plus a 0-level label column with the same rows.
fn with_label(t: LodTensor) -> Dataset {
    let label = LodTensor::try_new(
        Lod::default(),
        Values::from_vec::<Int64Type>((0..t.num_rows() as i64).collect(), vec![]).unwrap(),
    )
    .unwrap();
    Dataset::try_new(vec![Column::new("x", t), Column::new("label", label)]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn file_round_trip(case in case(), batch_bytes in 1usize..400, split in 0usize..6) {
        let ds = with_label(case.tensor());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.arrow");
        // Written in two pieces, cut into batches of a few hundred bytes.
        let split = split.min(ds.num_rows());
        let pieces = [ds.slice_rows(0..split).unwrap(), ds.slice_rows(split..ds.num_rows()).unwrap()];
        write(&path, &pieces, WriteOptions::default().with_batch_bytes(batch_bytes).with_offset_width(case.width));
        let file = MappedDataset::open(&path).unwrap();
        prop_assert_eq!(file.num_rows(), ds.num_rows());
        let mut row = 0;
        for batch in file.batches() {
            prop_assert_eq!(batch, &ds.slice_rows(row..row + batch.num_rows()).unwrap());
            row += batch.num_rows();
        }
        for r in 0..ds.num_rows() {
            prop_assert_eq!(file.sample(r).unwrap(), ds.slice_rows(r..r + 1).unwrap());
        }
        let chunks = file.rows(0..ds.num_rows()).unwrap();
        prop_assert_eq!(chunks.iter().map(Dataset::num_rows).sum::<usize>(), ds.num_rows());
    }
}

/// Pending rows of half a batch or more are written alone rather than topped up with a cut
/// of the next dataset (which would copy both into one batch); small ones are gathered.
#[test]
fn large_pending_rows_are_written_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    // One row of 10 f32 and one level: 48 bytes of values and offsets.
    let row = |v: f32| {
        let t = LodTensor::from_lengths::<Float32Type>(&[vec![10]], vec![v; 10], vec![]).unwrap();
        Dataset::try_new(vec![Column::new("x", t)]).unwrap()
    };
    let rows: Vec<Dataset> = (0..3).map(|i| row(i as f32)).collect();
    write(&path, &rows, WriteOptions::default().with_batch_bytes(80));
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 3);
    write(&path, &rows, WriteOptions::default().with_batch_bytes(200));
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!(file.batches().len(), 1);
}

/// The tail of a dataset larger than a batch, left pending for the next write, is copied
/// out of it: the writer does not keep the caller's dataset alive (a converter writing row
/// groups of 128 MiB would otherwise hold two of them).
#[test]
fn a_pending_tail_does_not_keep_the_dataset_alive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    // 10 rows of 48 bytes, batches of 200: 4 + 4 written, 2 pending.
    let lengths = vec![vec![10; 10]];
    let values: Vec<f32> = (0..100).map(|v| v as f32).collect();
    let t = LodTensor::from_lengths::<Float32Type>(&lengths, values, vec![]).unwrap();
    let ds = Dataset::try_new(vec![Column::new("x", t)]).unwrap();
    let buffer = ds.columns()[0]
        .tensor()
        .unwrap()
        .values()
        .items()
        .to_data()
        .buffers()[0]
        .clone();
    let mut writer =
        DatasetWriter::create(&path, WriteOptions::default().with_batch_bytes(200)).unwrap();
    writer.write(&ds).unwrap();
    // Ours, `ds`'s: nothing else holds the values.
    assert_eq!(buffer.strong_count(), 2);
    writer.write(&ds.slice_rows(0..1).unwrap()).unwrap();
    writer.finish().unwrap();
    let file = MappedDataset::open(&path).unwrap();
    let batches: Vec<usize> = file.batches().iter().map(Dataset::num_rows).collect();
    assert_eq!(batches, vec![4, 4, 3]);
    for r in 0..10 {
        assert_eq!(file.sample(r).unwrap(), ds.slice_rows(r..r + 1).unwrap());
    }
    assert_eq!(file.sample(10).unwrap(), ds.slice_rows(0..1).unwrap());
}

#[test]
fn views_lie_inside_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    let ds = example_dataset();
    write(
        &path,
        std::slice::from_ref(&ds),
        WriteOptions::default().with_batch_bytes(100),
    );
    let file = MappedDataset::open(&path).unwrap();
    assert!(file.batches().len() > 1);
    let mapping = file.as_bytes();
    for r in 0..file.num_rows() {
        let sample = file.sample(r).unwrap();
        let tokens = sample.column("tokens").unwrap();
        let values = tokens.typed_values::<Float32Type>().unwrap();
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, size_of_val(values))
        };
        assert!(inside(bytes, mapping), "values of row {r}");
        for level in tokens.lod().levels() {
            let offsets = unsafe { std::slice::from_raw_parts(level.as_ptr(), level.len() * 8) };
            assert!(inside(offsets, mapping), "offsets of row {r}");
        }
        assert_eq!(sample, ds.slice_rows(r..r + 1).unwrap());
    }
    // The three slices of the reference documents, over the whole file.
    let article = file.slice_sequence("tokens", 0, 2).unwrap();
    assert_eq!(article.lod().lengths(), vec![vec![2], vec![2, 3]]);
    assert_eq!(article.elements().len(), 5);
    let sentence = file.slice_sequence("tokens", 1, 4).unwrap();
    assert_eq!(
        sentence.typed_values::<Float32Type>().unwrap(),
        &[20., 21., 22., 23.]
    );
    assert!(matches!(
        file.slice_sequence("tokens", 1, 6)
            .map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::SequenceOutOfBounds {
            level: 1,
            index: 6,
            len: 6
        }))
    ));
    assert!(matches!(
        file.slice_sequence("tokens", 2, 0)
            .map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::LevelOutOfBounds {
            level: 2,
            levels: 2
        }))
    ));
    assert!(matches!(
        file.slice_sequence("nope", 0, 0).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSuchColumn(_)))
    ));
    assert!(matches!(
        file.sample(3).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::RowsOutOfBounds { .. }))
    ));
    let across = file.rows(1..3).unwrap();
    assert_eq!(across.iter().map(Dataset::num_rows).sum::<usize>(), 2);
    assert_eq!(
        file.schema().field(0).metadata()["lodtensor.level_names"],
        r#"["articles","sentences"]"#
    );
}

#[test]
fn readers_are_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<MappedDataset>();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    write(
        &path,
        &[example_dataset()],
        WriteOptions::default().with_batch_bytes(64),
    );
    let file = MappedDataset::open(&path).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let file = &file;
            s.spawn(move || {
                for i in 0..300 {
                    let row = (i * 7 + t) % file.num_rows();
                    let label = file.sample(row).unwrap();
                    let label = label.column("label").unwrap();
                    assert_eq!(
                        label.typed_values::<Int64Type>().unwrap(),
                        &[7 + row as i64]
                    );
                }
            });
        }
    });
}

#[test]
fn empty_datasets_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.arrow");
    write(
        &path,
        &[example_dataset().slice_rows(0..0).unwrap()],
        WriteOptions::default(),
    );
    let file = MappedDataset::open(&path).unwrap();
    assert_eq!((file.num_rows(), file.batches().len()), (0, 0));
    let w = DatasetWriter::create(dir.path().join("none.arrow"), WriteOptions::default()).unwrap();
    assert!(matches!(
        w.finish().map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::NoSchema))
    ));
    assert!(!dir.path().join("none.arrow").exists());
}

#[test]
fn schema_changes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = DatasetWriter::create(dir.path().join("x.arrow"), WriteOptions::default()).unwrap();
    let ds = example_dataset();
    w.write(&ds).unwrap();
    let other = Dataset::try_new(vec![ds.columns()[1].clone()]).unwrap();
    assert!(matches!(
        w.write(&other).map_err(Error::into_kind),
        Err(ErrorKind::Argument(ArgumentError::SchemaMismatch { .. }))
    ));
}

/// Bytes of a small valid file.
fn example_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    write(
        &path,
        &[example_dataset()],
        WriteOptions::default().with_batch_bytes(200),
    );
    std::fs::read(path).unwrap()
}

fn open_bytes(dir: &Path, bytes: &[u8]) -> lodtensor::Result<MappedDataset> {
    let path = dir.join("bad.arrow");
    std::fs::write(&path, bytes).unwrap();
    MappedDataset::open(&path)
}

/// Reads every sample of every column, touching every value.
fn read_everything(file: &MappedDataset) {
    for batch in file.batches() {
        for c in batch.columns() {
            let t = c.tensor().unwrap();
            let _ = t.lod().absolute_offsets();
            let items = t.values().items();
            let _ = items
                .slice(0, items.len())
                .to_data()
                .get_slice_memory_size();
        }
    }
}

#[test]
fn corrupted_offsets_are_typed_errors_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    // The sentence offsets [0, 3, 5, 9, 10, 12, 15] are stored as i64; break the order.
    let needle: Vec<u8> = [0i64, 3, 5, 9]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let at = good
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("offsets in the file");
    let mut bad = good.clone();
    bad[at + 16..at + 24].copy_from_slice(&1i64.to_le_bytes());
    let err = open_bytes(dir.path(), &bad).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("bad.arrow") && text.contains("\"tokens\"") && text.contains("batch 0"),
        "{text}"
    );
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Data(DataError::DecreasingOffset {
                level: 1,
                index: 2,
                offset: 1,
                previous: 3
            })
        ),
        "{err}"
    );
    // An offset past the end of its child.
    let mut bad = good.clone();
    bad[at + 24..at + 32].copy_from_slice(&i64::MAX.to_le_bytes());
    let err = open_bytes(dir.path(), &bad).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Data(DataError::OffsetOutOfBounds {
                level: 1,
                index: 3,
                ..
            }) | ErrorKind::Data(DataError::DecreasingOffset {
                level: 1,
                index: 4,
                ..
            })
        ),
        "{err}"
    );
    // A trusted open skips reading offsets but still checks the layout and the LoD rules.
    let path = dir.path().join("trusted.arrow");
    std::fs::write(&path, &good[..good.len() - 1]).unwrap();
    // SAFETY: the test only checks that a truncated file is refused before any read.
    assert!(unsafe { MappedDataset::open_trusted(&path) }.is_err());
}

#[test]
fn truncated_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    for len in 0..good.len() {
        let err = open_bytes(dir.path(), &good[..len]).unwrap_err();
        assert!(err.path().is_some(), "{len}: {err}");
    }
    assert!(open_bytes(dir.path(), &good).is_ok());
}

/// The in-memory reader the fuzz targets use runs the same checks as the mapped one.
#[test]
fn bytes_read_from_memory_as_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    let mapped = open_bytes(dir.path(), &good).unwrap();
    let memory = MappedDataset::from_bytes(&good).unwrap();
    assert_eq!(memory.batches(), mapped.batches());
    assert_eq!(memory.path(), Path::new(""));
    for len in [0, 10, good.len() - 1] {
        let from_file = open_bytes(dir.path(), &good[..len]).unwrap_err();
        let from_memory = MappedDataset::from_bytes(&good[..len]).unwrap_err();
        assert_eq!(from_memory.to_string(), from_file.kind().to_string());
    }
}

#[test]
fn single_byte_changes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    let mut opened = 0;
    for at in 0..good.len() {
        for change in [|_: u8| 0x00, |_: u8| 0xff, |b: u8| b.wrapping_add(1)] {
            let mut bad = good.clone();
            bad[at] = change(bad[at]);
            if let Ok(file) = open_bytes(dir.path(), &bad) {
                read_everything(&file);
                opened += 1;
            }
        }
    }
    // Changes to values and padding leave a valid file.
    assert!(opened > 0);
}

#[test]
fn misaligned_buffers_are_an_error_not_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    // The values buffer of the first batch holds 30 f32 = 120 bytes; its descriptor is
    // (offset: i64, length: i64 = 120) in the message. Move its offset by one byte.
    let len = 120i64.to_le_bytes();
    let at = good
        .windows(8)
        .position(|w| w == len)
        .expect("the values buffer descriptor");
    let mut bad = good.clone();
    let offset = i64::from_le_bytes(bad[at - 8..at].try_into().unwrap());
    bad[at - 8..at].copy_from_slice(&(offset + 1).to_le_bytes());
    let err = open_bytes(dir.path(), &bad).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("align"), "{err}");
}

#[test]
fn a_newer_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = example_bytes();
    let mut bad = good.clone();
    let needle = b"lodtensor.format_version";
    let at = bad.windows(needle.len()).position(|w| w == needle).unwrap();
    // The value "1" follows the key (flatbuffers store key and value strings near each other).
    let one = bad[at..].iter().position(|&b| b == b'1').unwrap() + at;
    bad[one] = b'9';
    match open_bytes(dir.path(), &bad) {
        Err(e) => assert!(
            matches!(
                e.kind(),
                ErrorKind::Unsupported(UnsupportedError::UnsupportedVersion { .. })
            ) || matches!(e.kind(), ErrorKind::Format(FormatError::InvalidFile { .. })),
            "{e}"
        ),
        Ok(_) => panic!("a changed version opened"),
    }
}

/// Run by `a_killed_writer_leaves_old_or_new_never_partial` in a child process: rewrites
/// the target again and again until killed.
#[test]
#[ignore = "run as a child process by the crash test"]
fn child_writer() {
    let Ok(target) = std::env::var("LODTENSOR_CHILD_TARGET") else {
        return;
    };
    let ds = example_dataset();
    for round in 0.. {
        let mut w =
            DatasetWriter::create(&target, WriteOptions::default().with_batch_bytes(64)).unwrap();
        for _ in 0..(round % 50 + 1) {
            w.write(&ds).unwrap();
        }
        w.finish().unwrap();
    }
}

#[test]
fn a_killed_writer_leaves_old_or_new_never_partial() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.arrow");
    write(&target, &[example_dataset()], WriteOptions::default());
    let exe = std::env::current_exe().unwrap();
    for round in 0..12u64 {
        let mut child = std::process::Command::new(&exe)
            .args(["ipc::child_writer", "--exact", "--ignored", "--nocapture"])
            .env("LODTENSOR_CHILD_TARGET", &target)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20 + round * 37 % 300));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let file = MappedDataset::open(&target).unwrap();
        assert_eq!(file.num_rows() % 3, 0);
        assert!(file.num_rows() >= 3);
        read_everything(&file);
        // Nothing but the target and hidden temporary files.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                name == "x.arrow" || (name.starts_with(".x.arrow.") && name.ends_with(".tmp")),
                "{name}"
            );
        }
    }
}

#[test]
fn nulls_in_a_column_declared_a_tensor_are_refused_and_undeclared_it_is_a_side_column() {
    use std::sync::Arc;
    let list = arrow_array::LargeListArray::from_iter_primitive::<Int64Type, _, _>(vec![
        Some(vec![Some(1), Some(2)]),
        None,
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, metadata: &[(&str, &str)]| {
        let metadata = metadata.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let field = arrow_schema::Field::new("x", list.data_type().clone(), true)
            .with_metadata(metadata.collect::<std::collections::HashMap<_, _>>());
        let schema = Arc::new(arrow_schema::Schema::new(vec![field]));
        let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(list.clone())])
            .unwrap();
        let path = dir.path().join(name);
        let out = std::fs::File::create(&path).unwrap();
        let mut w = arrow_ipc::writer::FileWriter::try_new(out, &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        path
    };
    // format-spec §2.2: a column the file does not declare a tensor is a side column.
    let side = MappedDataset::open(file("side.arrow", &[])).unwrap();
    let column = &side.batches()[0].columns()[0];
    assert_eq!(column.side_array().unwrap().to_data(), list.to_data());
    assert_eq!(side.schema().field(0).metadata()["lodtensor.kind"], "side");
    let path = file("nulls.arrow", &[("lodtensor.kind", "tensor")]);
    let err = MappedDataset::open(&path).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Data(DataError::Nulls { count: 1, .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("column \"x\", batch 0: level 0"),
        "{err}"
    );
}

#[test]
fn an_exclusive_lock_holder_keeps_readers_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    write(&path, &[example_dataset()], WriteOptions::default());
    let writer_lock = std::fs::File::open(&path).unwrap();
    writer_lock.lock().unwrap(); // a cooperating tool about to rewrite the file in place
    let err = MappedDataset::open(&path).unwrap_err();
    assert!(err.to_string().contains("exclusive lock"), "{err}");
    writer_lock.unlock().unwrap();
    let file = MappedDataset::open(&path).unwrap();
    // Readers share: a second reader opens while the first holds its shared lock.
    assert_eq!(
        MappedDataset::open(&path).unwrap().num_rows(),
        file.num_rows()
    );
}

#[test]
fn readers_see_the_old_or_the_new_file_whole_while_another_process_rewrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.arrow");
    write(&target, &[example_dataset()], WriteOptions::default());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["ipc::child_writer", "--exact", "--ignored", "--nocapture"])
        .env("LODTENSOR_CHILD_TARGET", &target)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let opened = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while std::time::Instant::now() < deadline {
                    // Every open sees a complete file: 3 rows per dataset written.
                    let file = MappedDataset::open(&target).unwrap();
                    assert_eq!(file.num_rows() % 3, 0);
                    for row in (0..file.num_rows()).step_by(7) {
                        let label = file.sample(row).unwrap();
                        let label = label.column("label").unwrap();
                        assert_eq!(
                            label.typed_values::<Int64Type>().unwrap(),
                            &[7 + (row % 3) as i64]
                        );
                    }
                    read_everything(&file);
                    opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(opened.into_inner() > 0);
}

/// Run by `a_full_disk_is_a_clean_error_and_the_old_file_stays` under a file-size limit:
/// writes more than the limit allows and reports what the writer said.
#[test]
#[ignore = "run as a child process by the full-disk test"]
fn child_full_disk() {
    let Ok(target) = std::env::var("LODTENSOR_CHILD_TARGET") else {
        return;
    };
    let big = lodtensor::synthetic::Documents::default()
        .generate(&mut lodtensor::rng::SplitMix64::new(5), 20)
        .unwrap();
    let result = (|| {
        let mut w =
            DatasetWriter::create(&target, WriteOptions::default().with_batch_bytes(1 << 16))?;
        w.write(&big)?;
        w.finish()
    })();
    match result {
        Ok(_) => println!("WROTE"),
        Err(e) => println!("ERROR {e}"),
    }
}

#[test]
fn a_full_disk_is_a_clean_error_and_the_old_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("x.arrow");
    write(&target, &[example_dataset()], WriteOptions::default());
    let before = std::fs::read(&target).unwrap();
    // The kernel refuses writes past 64 KiB (EFBIG), as a full disk refuses them (ENOSPC).
    let target_env = target.as_os_str();
    let stdout = crate::common::run_with_file_size_limit(
        "ipc::child_full_disk",
        65536,
        &[("LODTENSOR_CHILD_TARGET", target_env)],
    );
    let line = crate::common::child_line(&stdout, "ERROR ");
    assert!(line.contains("x.arrow"), "{stdout}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("x.arrow")]);
}
