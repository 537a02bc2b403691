//! The order an epoch visits the samples in, before it is split among ranks and cut
//! into batches: file order, a seeded permutation of samples, of runs, or the windowed
//! shuffle of shards and runs ([`Shuffle`]). Every draw comes from the crate's fixed
//! SplitMix64, so a seed and an epoch give the same order on every machine, forever.

use std::ops::Range;

use super::config::Shuffle;
use crate::rng::SplitMix64;
use crate::row_index::RowIndex;

/// The unsigned integer a plan's working arrays keep sample numbers (and sample lengths) in:
/// `u32` where every value fits, half the memory of `usize`; `usize` otherwise. The values,
/// and so the plans, are the same either way.
pub(crate) trait Slot: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// `i`, which the caller knows fits.
    fn of(i: usize) -> Self;
    /// The value.
    fn get(self) -> usize;
    /// `samples` as [`Rows`], without a copy.
    fn rows(samples: Vec<Self>) -> Rows;
}

impl Slot for u32 {
    fn of(i: usize) -> Self {
        debug_assert!(u32::try_from(i).is_ok(), "{i} does not fit in 32 bits");
        i as u32
    }
    fn get(self) -> usize {
        self as usize
    }
    fn rows(samples: Vec<Self>) -> Rows {
        Rows::Narrow(samples)
    }
}

impl Slot for usize {
    fn of(i: usize) -> Self {
        i
    }
    fn get(self) -> usize {
        self
    }
    fn rows(samples: Vec<Self>) -> Rows {
        Rows::Wide(samples)
    }
}

/// Sample numbers kept as a [`Slot`] chose: in 32 bits where every one fits, half the
/// memory of `usize`. The numbers are the same either way (and equal as numbers).
#[derive(Clone, Debug)]
pub(crate) enum Rows {
    /// Every number below 2^32.
    Narrow(Vec<u32>),
    /// Any number.
    Wide(Vec<usize>),
}

impl PartialEq for Rows {
    fn eq(&self, other: &Rows) -> bool {
        self.len() == other.len() && self.iter(0..self.len()).eq(other.iter(0..other.len()))
    }
}

impl Rows {
    /// Number `i`.
    ///
    /// # Panics
    /// When `i` is not below [`Rows::len`].
    #[inline]
    pub(crate) fn get(&self, i: usize) -> usize {
        match self {
            Rows::Narrow(rows) => rows[i] as usize,
            Rows::Wide(rows) => rows[i],
        }
    }

    /// How many numbers there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Rows::Narrow(rows) => rows.len(),
            Rows::Wide(rows) => rows.len(),
        }
    }

    /// Numbers `range`, in order.
    pub(crate) fn iter(&self, range: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let (narrow, wide) = match self {
            Rows::Narrow(rows) => (&rows[range], &[][..]),
            Rows::Wide(rows) => (&[][..], &rows[range]),
        };
        narrow
            .iter()
            .map(|&r| r as usize)
            .chain(wide.iter().copied())
    }
}

/// Whether the numbers `0..n` fit in a `u32` [`Slot`].
pub(crate) fn fits_u32(n: usize) -> bool {
    u32::try_from(n).is_ok()
}

/// The samples `0..n` in the order epoch `epoch` visits them under `shuffle`. `batches`
/// says where every record batch starts (runs never cross one), `shards` where every
/// shard does (one shard for a single file). The samples are kept as `S` (`u32` when `n`
/// fits, [`Slot`]).
pub(super) fn epoch_order<S: Slot>(
    shuffle: Shuffle,
    n: usize,
    batches: &RowIndex,
    shards: &RowIndex,
    epoch: u64,
) -> Vec<S> {
    match shuffle {
        Shuffle::None => (0..n).map(S::of).collect(),
        Shuffle::Samples { seed } => {
            let mut order: Vec<S> = (0..n).map(S::of).collect();
            permute(&mut epoch_rng(seed, epoch), &mut order);
            order
        }
        Shuffle::Chunks { seed, rows } => {
            let mut chunks = runs(batches, 0..n, rows);
            permute(&mut epoch_rng(seed, epoch), &mut chunks);
            chunks.into_iter().flatten().map(S::of).collect()
        }
        Shuffle::Windowed { seed, rows, window } => {
            windowed_order(&mut epoch_rng(seed, epoch), batches, shards, rows, window)
        }
    }
}

/// [`epoch_order`] as [`Rows`]: in 32 bits when the samples `0..n` fit.
pub(super) fn epoch_rows(
    shuffle: Shuffle,
    n: usize,
    batches: &RowIndex,
    shards: &RowIndex,
    epoch: u64,
) -> Rows {
    match fits_u32(n) {
        true => Rows::Narrow(epoch_order(shuffle, n, batches, shards, epoch)),
        false => Rows::Wide(epoch_order(shuffle, n, batches, shards, epoch)),
    }
}

/// The generator of epoch `epoch` under `seed` (fixed forever: plans depend on it).
pub(super) fn epoch_rng(seed: u64, epoch: u64) -> SplitMix64 {
    let mut mixer = SplitMix64::new(seed);
    let base = mixer.next_u64();
    SplitMix64::new(base ^ epoch.wrapping_mul(0xd1b5_4a32_d192_ed03))
}

/// A uniform integer in `0..n` (`n >= 1`), by multiply-shift (Lemire), portable.
fn below(rng: &mut SplitMix64, n: usize) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

/// Fisher–Yates, from the back.
pub(super) fn permute<T>(rng: &mut SplitMix64, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, below(rng, i + 1));
    }
}

/// The runs of up to `rows` samples of `rows_in` that never cross a record batch.
fn runs(batches: &RowIndex, rows_in: Range<usize>, rows: usize) -> Vec<Range<usize>> {
    let mut chunks = Vec::new();
    for w in batches.starts().windows(2) {
        let mut start = w[0].max(rows_in.start);
        let stop = w[1].min(rows_in.end);
        while start < stop {
            let end = (start + rows).min(stop);
            chunks.push(start..end);
            start = end;
        }
    }
    chunks
}

/// The order of [`Shuffle::Windowed`]: shards, then runs within each shard, then the
/// stream through a window of `window` samples. The window draws from a generator of its
/// own, so the stream is the same whatever the window.
fn windowed_order<S: Slot>(
    rng: &mut SplitMix64,
    batches: &RowIndex,
    shards: &RowIndex,
    rows: usize,
    window: usize,
) -> Vec<S> {
    let mut picks = SplitMix64::new(rng.next_u64());
    let mut shard_order: Vec<usize> = (0..shards.num_parts()).collect();
    permute(rng, &mut shard_order);
    let mut order = Vec::with_capacity(batches.num_rows());
    let mut held: Vec<S> = Vec::with_capacity(window.min(batches.num_rows()));
    for shard in shard_order {
        let mut chunks = runs(batches, shards.part_rows(shard), rows);
        permute(rng, &mut chunks);
        for sample in chunks.into_iter().flatten().map(S::of) {
            if held.len() < window {
                held.push(sample);
            } else {
                let i = below(&mut picks, window);
                order.push(std::mem::replace(&mut held[i], sample));
            }
        }
    }
    permute(&mut picks, &mut held);
    order.extend(held);
    order
}
