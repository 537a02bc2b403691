//! Raw bytes as a Parquet file: read every batch, then every value of every column.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::io::parquet::{ParquetReadOptions, ParquetReader};
use lodtensor_fuzz::check_tensor;

fuzz_target!(|data: &[u8]| {
    let bytes = bytes::Bytes::copy_from_slice(data);
    let options = ParquetReadOptions::default().with_batch_size(7);
    let Ok(reader) = ParquetReader::try_new(bytes, &options) else {
        return;
    };
    for dataset in reader.take(64) {
        let Ok(dataset) = dataset else { return };
        for column in dataset.columns() {
            if let Some(t) = column.as_tensor() {
                check_tensor(t, None);
            }
        }
    }
});
