//! Raw bytes as Paddle LoDTensor records: read them; what reads must write back to bytes
//! that read as the same tensors, and write again to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lodtensor::io::paddle;
use lodtensor_fuzz::check_tensor;

fuzz_target!(|data: &[u8]| {
    if let Ok(tensor) = paddle::read_tensor(data) {
        check_tensor(&tensor, None);
    }
    let Ok(tensors) = paddle::read_records(data) else {
        return;
    };
    for t in &tensors {
        check_tensor(t, None);
    }
    let mut bytes = Vec::new();
    paddle::write_combined(&mut bytes, &tensors).expect("a tensor that was read writes");
    let back = paddle::read_records(&bytes).expect("written records read");
    assert_eq!(back, tensors);
    let mut again = Vec::new();
    paddle::write_combined(&mut again, &back).expect("a tensor that was read writes");
    assert_eq!(again, bytes);
});
