//! Raw bytes as a Parquet file, read by the direct decoder and by the general reader: no
//! panic, and where both succeed they agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
use lodtensor_fuzz::check_tensor;

fuzz_target!(|data: &[u8]| {
    let bytes = bytes::Bytes::copy_from_slice(data);
    let read = |direct: bool| {
        let options = ParquetReadOptions::default().with_direct(direct);
        ParquetReader::try_new(bytes.clone(), &options).and_then(|r| r.read_all())
    };
    let Ok(direct) = read(true) else { return };
    for column in direct.columns() {
        if let Some(t) = column.as_tensor() {
            check_tensor(t, None);
        }
    }
    if let Ok(general) = read(false) {
        assert_eq!(
            direct, general,
            "the direct decoder and the general reader disagree"
        );
    }
});
