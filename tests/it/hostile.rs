//! Hostile inputs: files and directories built to hang, overflow the stack, escape the
//! dataset directory, echo huge values or make a reader do quadratic work. Each case must
//! give one typed error line (or, for the big inputs, finish in linear time).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use lodtensor::arrow::types::Int64Type;
use lodtensor::io::paddle;
use lodtensor::shards::{MANIFEST_NAME, Manifest, ShardOptions, ShardWriter, ShardedDataset};
use lodtensor::{Column, Dataset, ErrorKind, LodTensor, MAX_LEVELS};

/// A dataset of 3 rows in two shards (rows 0..2, row 2).
fn sharded(dir: &Path) {
    let t =
        LodTensor::from_lengths::<Int64Type>(&[vec![2, 1, 3]], (0..6).collect(), vec![]).unwrap();
    let options = ShardOptions::default().with_shard_rows(2);
    let mut writer = ShardWriter::create(dir, options).unwrap();
    writer
        .write(&Dataset::try_new(vec![Column::new("ids", t)]).unwrap())
        .unwrap();
    writer.finish().unwrap();
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Runs `f` on a thread: a hang is a failure after a minute, not a stuck test run.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(60))
        .expect("hung on a FIFO")
}

fn one_line(e: &lodtensor::Error) -> String {
    let message = e.to_string();
    assert!(!message.trim_end().contains('\n'), "{message}");
    assert!(
        message.len() < 1000,
        "{} bytes: {}…",
        message.len(),
        &message[..200]
    );
    message
}

#[test]
fn a_fifo_shard_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    sharded(dir.path());
    let manifest_path = dir.path().join(MANIFEST_NAME);
    let manifest = Manifest::load(&manifest_path).unwrap();
    let shard = dir.path().join(&manifest.shards[1].file);
    std::fs::remove_file(&shard).unwrap();
    mkfifo(&shard);
    let path = dir.path().to_path_buf();
    let result = within_a_minute(move || ShardedDataset::open(&path).unwrap().validate());
    let err = result.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err}");
    assert!(one_line(&err).contains("FIFO"), "{err}");
}

#[test]
fn a_fifo_manifest_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join(MANIFEST_NAME));
    let path = dir.path().to_path_buf();
    let err = within_a_minute(move || ShardedDataset::open(&path).map(|_| ())).unwrap_err();
    assert!(one_line(&err).contains("FIFO"), "{err}");
}

#[test]
fn a_manifest_too_large_is_refused_by_its_size_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(MANIFEST_NAME);
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(2 << 30).unwrap(); // sparse: no disk used
    let err = ShardedDataset::open(dir.path()).unwrap_err();
    assert!(one_line(&err).contains("2147483648 bytes"), "{err}");
}

#[test]
fn a_manifest_that_is_a_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(MANIFEST_NAME);
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let err = within_a_minute(move || Manifest::load(&path).map(|_| ())).unwrap_err();
    assert!(one_line(&err).contains("device"), "{err}");
}

#[test]
fn shards_and_manifests_linked_from_outside_the_directory_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.arrow");
    std::fs::write(&secret, vec![7u8; 12345]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    sharded(dir.path());
    let manifest = Manifest::load(dir.path().join(MANIFEST_NAME)).unwrap();
    // A link inside the directory is followed.
    let inside = dir.path().join(&manifest.shards[0].file);
    std::fs::rename(&inside, dir.path().join("moved.bin")).unwrap();
    std::os::unix::fs::symlink("moved.bin", &inside).unwrap();
    ShardedDataset::open(dir.path()).unwrap().shard(0).unwrap();
    // A link out of it is refused before anything of its target is read.
    let shard = dir.path().join(&manifest.shards[1].file);
    std::fs::remove_file(&shard).unwrap();
    std::os::unix::fs::symlink(&secret, &shard).unwrap();
    let err = ShardedDataset::open(dir.path())
        .unwrap()
        .shard(1)
        .unwrap_err();
    let message = one_line(&err);
    assert!(matches!(err.kind(), ErrorKind::Io(_)), "{err}");
    assert!(message.contains("symbolic link"), "{message}");
    assert!(!message.contains("12345"), "{message}");
    // So is a manifest linked from elsewhere.
    let other = outside.path().join("other.json");
    std::fs::copy(dir.path().join(MANIFEST_NAME), &other).unwrap();
    std::fs::remove_file(dir.path().join(MANIFEST_NAME)).unwrap();
    std::os::unix::fs::symlink(&other, dir.path().join(MANIFEST_NAME)).unwrap();
    let err = ShardedDataset::open(dir.path()).unwrap_err();
    assert!(one_line(&err).contains("symbolic link"), "{err}");
}

#[test]
fn manifest_errors_never_echo_a_value_whole() {
    let long = "x".repeat(1 << 20);
    let cases = [
        format!("[{}]", vec!["1"; 1 << 18].join(",")),
        format!(r#"{{"format": "{long}", "version": 1, "columns": [], "shards": []}}"#),
        format!(
            r#"{{"format": "lodtensor.shards", "version": 1, "columns": [], "shards": [{{"file": "{long}"}}]}}"#
        ),
        format!(
            r#"{{"format": "lodtensor.shards", "version": 1, "columns": [], "shards": [[{}]]}}"#,
            vec!["2"; 1 << 18].join(",")
        ),
    ];
    for text in cases {
        one_line(&Manifest::parse(&text).unwrap_err());
    }
}

#[test]
fn deeply_nested_manifest_json_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for text in [
        deep.clone(),
        format!(
            r#"{{"format": "lodtensor.shards", "version": 1, "columns": [], "shards": [{deep}]}}"#
        ),
        format!(
            r#"{{"format": "lodtensor.shards", "version": 1, "columns": {deep}, "shards": []}}"#
        ),
    ] {
        one_line(&Manifest::parse(&text).unwrap_err());
    }
}

#[test]
fn manifest_counts_that_add_up_past_the_address_space_are_refused() {
    // Shards of the most bytes an object may have (2^48), each holding 2^55 - 16 elements
    // (what 1024 times its bytes hold): 600 of them add up past 2^64.
    let n = (1usize << 55) - 16;
    let shard = |i: usize| {
        format!(
            r#"{{"file": "p{i}.arrow", "rows": 1, "batches": 1, "bytes": {}, "crc32c": 0, "columns": [{{"sequences": [1], "elements": {n}}}]}}"#,
            1u64 << 48
        )
    };
    let shards: Vec<String> = (0..600).map(shard).collect();
    let text = format!(
        r#"{{"format": "lodtensor.shards", "version": 1, "columns": [{{"name": "x", "dtype": "int64", "element_shape": [], "offsets": ["int64"]}}], "shards": [{}]}}"#,
        shards.join(", ")
    );
    let err = Manifest::parse(&text).unwrap_err();
    assert!(one_line(&err).contains("add up"), "{err}");
}

/// A Paddle record of one element under `levels` LoD levels of one sequence each.
fn deep_pdtensor(levels: usize) -> Vec<u8> {
    let t = LodTensor::from_lengths::<Int64Type>(&[vec![1]], vec![5], vec![]).unwrap();
    let one = paddle::to_bytes(&t).unwrap();
    // version (4), level count (8), level 0: size (8) and offsets 0, 1 (16), then the tensor.
    let mut out = one[..4].to_vec();
    out.extend((levels as u64).to_le_bytes());
    for _ in 0..levels {
        out.extend(16u64.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend(1u64.to_le_bytes());
    }
    out.extend(&one[4 + 8 + 8 + 16..]);
    out
}

#[test]
fn paddle_lod_levels_are_bounded() {
    let fits = paddle::read_tensor(&deep_pdtensor(MAX_LEVELS)).unwrap();
    assert_eq!(fits.num_levels(), MAX_LEVELS);
    for levels in [MAX_LEVELS + 1, 64, 9000, 50_000] {
        let err = paddle::read_tensor(&deep_pdtensor(levels)).unwrap_err();
        assert!(
            one_line(&err).contains(&format!("{levels} LoD levels")),
            "{err}"
        );
    }
}

/// A Thrift compact varint.
#[cfg(feature = "parquet")]
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A Parquet file with no rows whose schema nests `depth` groups over one INT32 leaf.
#[cfg(feature = "parquet")]
fn deep_parquet(depth: usize) -> Vec<u8> {
    let mut footer = vec![0x15, 0x02, 0x19, 0xfc]; // version 1; schema: a list of structs
    varint(depth as u64 + 2, &mut footer);
    footer.extend([0x48, 4, b'r', b'o', b'o', b't', 0x15, 0x02, 0x00]); // root: 1 child
    for _ in 0..depth {
        // repetition OPTIONAL, name "a", 1 child
        footer.extend([0x35, 0x02, 0x18, 1, b'a', 0x15, 0x02, 0x00]);
    }
    footer.extend([0x15, 0x02, 0x25, 0x02, 0x18, 1, b'v', 0x00]); // INT32, OPTIONAL, "v"
    footer.extend([0x16, 0x00, 0x19, 0x0c, 0x00]); // num_rows 0, no row groups, stop
    let mut file = b"PAR1".to_vec();
    file.extend(&footer);
    file.extend((footer.len() as u32).to_le_bytes());
    file.extend(b"PAR1");
    file
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_schema_depth_is_bounded() {
    use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.parquet");
    std::fs::write(&path, deep_parquet(2000)).unwrap();
    let err = ParquetReader::open(&path, &ParquetReadOptions::default()).unwrap_err();
    assert!(one_line(&err).contains("nested"), "{err}");
    // A shallow file of the same make gets past the depth check to the crate's reader.
    std::fs::write(&path, deep_parquet(3)).unwrap();
    if let Err(e) = ParquetReader::open(&path, &ParquetReadOptions::default()) {
        assert!(!e.to_string().contains("nested"), "{e}");
    }
}

#[test]
fn many_columns_are_checked_in_linear_time() {
    // 200,000 columns (the records of a `.pdiparams`): pairwise name checks would take
    // minutes here.
    let t = LodTensor::from_lengths::<Int64Type>(&[vec![1]], vec![1], vec![]).unwrap();
    let columns: Vec<Column> = (0..200_000)
        .map(|i| Column::new(format!("tensor_{i}"), t.clone()))
        .collect();
    assert_eq!(Dataset::try_new(columns).unwrap().columns().len(), 200_000);
}

#[test]
fn a_file_truncated_in_place_while_mapped_gives_an_error_not_sigbus() {
    use lodtensor::{DatasetWriter, MappedDataset, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.arrow");
    let t =
        LodTensor::from_lengths::<Int64Type>(&[vec![3000; 100]], vec![7; 300_000], vec![]).unwrap();
    let mut writer = DatasetWriter::create(&path, WriteOptions::default()).unwrap();
    writer
        .write(&Dataset::try_new(vec![Column::new("x", t)]).unwrap())
        .unwrap();
    writer.finish().unwrap();
    let file = MappedDataset::open(&path).unwrap();
    // A writer that ignores the shared lock truncates the file in place.
    let out = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    out.set_len(64).unwrap();
    for result in [
        file.sample(99).map(|_| ()),
        file.rows(50..100).map(|_| ()),
        file.slice_sequence("x", 0, 99).map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(one_line(&err).contains("changed in place"), "{err}");
    }
}

#[test]
fn manifest_counts_the_shard_s_bytes_cannot_hold_are_refused_naming_them() {
    let shard = |sequences: u64, elements: u64, batches: u64| {
        format!(
            r#"{{"format": "lodtensor.shards", "version": 1, "columns": [{{"name": "x", "dtype": "float32", "element_shape": [4], "offsets": ["int32"]}}], "shards": [{{"file": "p.arrow", "rows": {sequences}, "batches": {batches}, "bytes": 4096, "crc32c": 0, "columns": [{{"sequences": [{sequences}], "elements": {elements}}}]}}]}}"#
        )
    };
    assert!(Manifest::parse(&shard(1 << 20, 1 << 18, 1)).is_ok());
    for (text, field) in [
        (shard(1 << 40, 10, 1), "shards[0].columns[0].sequences[0]"),
        (shard(10, 1 << 40, 1), "shards[0].columns[0].elements"),
        (shard(10, 10, 1 << 40), "shards[0].batches"),
    ] {
        let err = Manifest::parse(&text).unwrap_err();
        let message = one_line(&err);
        assert!(
            message.contains(field) && message.contains("4096 bytes"),
            "{err}"
        );
    }
}

#[test]
fn a_five_megabyte_column_name_in_a_pending_manifest_gives_a_bounded_schema_mismatch() {
    use lodtensor::ArgumentError;
    use lodtensor::shards::commit;
    let dir = tempfile::tempdir().unwrap();
    sharded(dir.path());
    let t = LodTensor::from_lengths::<Int64Type>(&[vec![1]], vec![7], vec![]).unwrap();
    let options = ShardOptions::default().with_prefix("w1");
    let mut writer = ShardWriter::pending(dir.path(), options).unwrap();
    writer
        .write(&Dataset::try_new(vec![Column::new("ids", t)]).unwrap())
        .unwrap();
    writer.finish().unwrap();
    let pending = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("_lodtensor.pending.w1."))
        .unwrap();
    let text = std::fs::read_to_string(&pending).unwrap();
    let huge = "c".repeat(5_000_000);
    std::fs::write(&pending, text.replace("\"ids\"", &format!("\"{huge}\""))).unwrap();
    let err = commit(dir.path()).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Argument(ArgumentError::SchemaMismatch { .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().len() <= 1000,
        "{} bytes",
        err.to_string().len()
    );
    let ErrorKind::Argument(ArgumentError::SchemaMismatch { reason, .. }) = err.kind() else {
        unreachable!()
    };
    assert!(reason.len() < 1000, "a reason of {} bytes", reason.len());
}

#[test]
fn a_manifest_claiming_a_shard_or_index_object_past_2_pow_48_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    sharded(dir.path());
    let path = dir.path().join(MANIFEST_NAME);
    let manifest = Manifest::load(&path).unwrap();
    let mut at_most = manifest.clone();
    at_most.shards[0].bytes = 1 << 48;
    Manifest::parse(&at_most.to_json()).unwrap();
    for bytes in [(1 << 48) + 1, 1 << 62, u64::MAX] {
        let mut forged = manifest.clone();
        forged.shards[0].bytes = bytes;
        let err = Manifest::parse(&forged.to_json()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("shards[0].bytes") && message.contains(&bytes.to_string()),
            "{message}"
        );
        assert!(!manifest.index.is_empty());
        let mut forged = manifest.clone();
        forged.index[0].bytes = bytes;
        let err = Manifest::parse(&forged.to_json()).unwrap_err();
        assert!(err.to_string().contains("].bytes"), "{err}");
    }
}

#[test]
fn a_size_option_of_zero_is_refused_naming_it() {
    use lodtensor::{ArgumentError, DatasetWriter, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let zero: [(&str, ShardOptions); 3] = [
        ("shard_rows", ShardOptions::default().with_shard_rows(0)),
        ("shard_bytes", ShardOptions::default().with_shard_bytes(0)),
        (
            "batch_bytes",
            ShardOptions::default().with_write_options(WriteOptions::default().with_batch_bytes(0)),
        ),
    ];
    for (option, options) in zero {
        let made = [
            ShardWriter::create(dir.path().join(option), options.clone()).err(),
            ShardWriter::pending(dir.path().join(option), options.with_prefix("w1")).err(),
        ];
        for err in made {
            let err = err.expect("refused");
            assert!(
                matches!(err.kind(), ErrorKind::Argument(ArgumentError::InvalidArgument { name, .. }) if *name == option),
                "{err}"
            );
            assert!(err.to_string().contains(option), "{err}");
        }
    }
    let err = DatasetWriter::create(
        dir.path().join("f.arrow"),
        WriteOptions::default().with_batch_bytes(0),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("batch_bytes"), "{err}");
    assert!(!dir.path().join("f.arrow").exists());
}
