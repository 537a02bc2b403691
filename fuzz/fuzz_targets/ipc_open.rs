//! Raw bytes as an Arrow IPC file: open with every check, then read everything.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor_fuzz::{open_bytes, read_everything};

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = open_bytes(data) {
        read_everything(&file);
    }
});
