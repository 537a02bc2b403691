//! Reading a manifest costs about its size in memory, not a JSON tree of it: the peak of
//! the bytes allocated while `ShardedDataset::open` reads a manifest of many shards stays
//! under twice the manifest's size. One test, so that the counting allocator sees nothing
//! else. (`cargo run --release --example manifest_rss` measures the peak RSS of a million
//! shards.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use lodtensor::shards::{
    ColumnSpec, ColumnStats, MANIFEST_NAME, Manifest, ShardEntry, ShardedDataset,
};
use lodtensor::{DType, OffsetWidth};

/// Counts the bytes allocated and the peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are only
// bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for this call.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised for this call.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A manifest of `shards` shards of one one-level column.
fn manifest(shards: usize) -> Manifest {
    let columns = vec![ColumnSpec {
        name: "tokens".into(),
        dtype: DType::Int64,
        element_shape: vec![],
        offsets: vec![OffsetWidth::I64],
        level_names: vec![],
    }];
    let shards = (0..shards)
        .map(|i| ShardEntry {
            file: format!("part-{i:07}.arrow"),
            rows: 1000,
            batches: 1,
            bytes: 123_456,
            crc32c: 0xdead_beef,
            columns: vec![ColumnStats {
                sequences: vec![1000],
                elements: 50_000,
            }],
        })
        .collect();
    Manifest { columns, shards }
}

#[test]
fn opening_a_manifest_allocates_less_than_twice_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(MANIFEST_NAME);
    let shards = 50_000;
    manifest(shards).write(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let data = ShardedDataset::open(dir.path()).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    assert_eq!(data.num_shards(), shards);
    assert!(
        peak <= 2 * size,
        "opening a manifest of {size} bytes allocated {peak} bytes at the peak"
    );
}
