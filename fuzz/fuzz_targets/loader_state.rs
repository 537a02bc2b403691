//! Raw bytes as a saved loader state (`LoaderState::from_json`, what `load_state_dict`
//! reads): it must give a state or an error, never panic; an error is one line of bounded
//! length; a state that parses writes back to JSON that parses to the same state; and
//! restoring it into loaders of several kinds (elastic, by parts, packed, balanced, a
//! schedule, a mixture under two sets of weights or a schedule of them, packed or not) over a small file goes on or refuses,
//! never panics, and a loader that goes on reads its epoch to the end.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lodtensor::MappedDataset;
use lodtensor::loader::{Balance, Loader, LoaderBuilder, LoaderState, Mixture, Packing, Schedule};
use lodtensor_fuzz::{assert_bounded, scratch_dir};

/// A file of five documents of 1..=5 tokens, written once.
fn data() -> &'static MappedDataset {
    static DATA: OnceLock<MappedDataset> = OnceLock::new();
    DATA.get_or_init(|| {
        let path = scratch_dir().join("loader_state.arrow");
        let (_dir, fixture) = lodtensor::doc_fixtures::file().expect("the fixture");
        std::fs::copy(fixture, &path).expect("copying the fixture");
        MappedDataset::open(&path).expect("the fixture opens")
    })
}

fuzz_target!(|data_bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(data_bytes) else {
        return;
    };
    let state = match LoaderState::from_json(text) {
        Ok(state) => state,
        Err(e) => return assert_bounded(&e),
    };
    let again = LoaderState::from_json(&state.to_json()).expect("written states parse");
    assert_eq!(again, state);
    let file = data();
    let kinds: [fn(LoaderBuilder<'_>) -> LoaderBuilder<'_>; 5] = [
        |b| b.with_batch_size(2).elastic_shard(0, 2),
        |b| b.with_token_budget(6).shard(0, 1),
        |b| {
            b.with_batch_size(1)
                .with_packing(Packing::new(3))
                .elastic_shard(1, 2)
        },
        |b| {
            b.with_token_budget(5)
                .with_balance(Balance::Tokens)
                .elastic_shard(0, 3)
        },
        |b| {
            let ramp = Schedule::new(vec![(0, 1), (4, 2)]).expect("a schedule");
            b.with_batch_size_schedule(ramp).elastic_shard(0, 1)
        },
    ];
    for kind in kinds {
        goes_on_or_refuses(
            kind(Loader::builder(file)).build().expect("a loader"),
            &state,
        );
    }
    // A mixture of the file with itself, under the weights of the seeds' states, others and
    // a schedule of them, not packed and packed at two lengths (a packed mixture's state
    // goes on at another).
    let schedule = Schedule::new(vec![(0, vec![0.7, 0.3]), (6, vec![0.2, 0.8])]);
    let mixtures = [[0.7, 0.3], [0.2, 0.8]]
        .map(|weights| Mixture::new(vec![file.into(), file.into()], weights.to_vec()))
        .into_iter()
        .chain([Mixture::new(vec![file.into(), file.into()], Vec::new())
            .with_weight_schedule(schedule.expect("a schedule"))]);
    for mixture in mixtures {
        let mixture = mixture.with_seed(1);
        let b = Loader::builder(&mixture)
            .with_batch_size(2)
            .elastic_shard(0, 2);
        goes_on_or_refuses(b.build().expect("a mixture's loader"), &state);
        for pack in [3, 4] {
            let b = Loader::builder(&mixture)
                .with_batch_size(1)
                .with_packing(Packing::new(pack))
                .elastic_shard(0, 2);
            goes_on_or_refuses(b.build().expect("a packed mixture's loader"), &state);
        }
    }
});

/// Restores `state` into `loader`: it goes on and reads its epoch to the end, or refuses
/// with a bounded error; never a panic.
fn goes_on_or_refuses(mut loader: Loader, state: &LoaderState) {
    match loader.restore(state) {
        Ok(()) => {
            // An epoch of 15 tokens (30 for a mixture) has at most 30 batches (a packed
            // mixture's epoch after a change of length, a few more).
            for _ in 0..61 {
                match loader.next_batch() {
                    Ok(Some(_)) => {}
                    Ok(None) => return,
                    Err(e) => return assert_bounded(&e),
                }
            }
            panic!("the epoch ends");
        }
        Err(e) => assert_bounded(&e),
    }
}
