//! The batches of a step being filled by [`Filler::fill`](super::Filler::fill), kept by
//! cost for the cheapest that fits an item, with what each fits and the longest of those.

use super::{Bin, Left};

/// Buckets of cost at most (a key per batch in each: 32 KiB of bits at 64 ranks).
const MOST_BUCKETS: usize = 1 << 12;

/// Keys of at most this many bits (512 KiB) at up to 2²² ranks (more: a bucket).
const MOST_KEYS: usize = 1 << 22;

/// Buckets of cost at least `2^-MOST_SCALE_BITS` wide.
const MOST_SCALE_BITS: i32 = 8;

/// The batches of a step as keys `⌊cost·2^f⌋·2^shift + b` in a two-level bit set (the
/// costs from the last bucket on in it): the batches in the order of their costs' buckets,
/// and in a bucket by number. The cheapest batch (the first such) that fits an item is the
/// one of least cost among those of the first bucket where any fits it; each bucket's least
/// cost and how many batches have it are kept, so that when the bucket's first batch costs
/// that and fits the item (batches of equal cost are many: LPT evens them out) it is the
/// one, with no pass over the bucket. Batches of least cost have the most room for cost; one
/// may lack the tokens another has: the buckets after it are then looked in. Costs only grow
/// while a step is filled: the least key never decreases and is looked for from the last.
#[derive(Default)]
pub(in crate::loader::plan::balanced) struct Cheapest {
    keys: Left,
    /// Each batch's key and cost.
    at: Vec<usize>,
    costs: Vec<f64>,
    /// Each bucket's least cost (infinite when it has no batch), and its batches of it.
    least_cost: Vec<f64>,
    at_least: Vec<u32>,
    /// The longest item each batch fits.
    fits: Vec<usize>,
    /// The longest of `fits`, and how many batches fit it.
    room: usize,
    at_room: usize,
    shift: u32,
    scale: f64,
    /// The last bucket.
    top: usize,
    /// Not above the least key.
    least: usize,
}

impl Cheapest {
    /// Keys for the batches of `step`, whose costs are mostly at most `most` (the larger
    /// ones share the last bucket).
    pub(super) fn start(&mut self, step: &[Bin], most: f64) {
        self.shift = step.len().next_power_of_two().trailing_zeros();
        let buckets = (MOST_KEYS >> self.shift).clamp(1, MOST_BUCKETS);
        // The finest scale that keeps the buckets of costs up to `most` within `buckets`.
        let mut bits = MOST_SCALE_BITS;
        while bits > -32 && most * 2f64.powi(bits) >= (buckets - 1) as f64 {
            bits -= 1;
        }
        self.scale = 2f64.powi(bits);
        self.top = buckets - 1;
        self.keys.reserve_empty(buckets << self.shift);
        if self.least_cost.len() < buckets {
            self.least_cost.resize(buckets, f64::INFINITY);
            self.at_least.resize(buckets, 0);
        }
        self.at.clear();
        self.costs.clear();
        for (b, bin) in step.iter().enumerate() {
            self.at.push(0);
            self.costs.push(bin.cost);
            self.insert(b);
        }
        self.least = 0;
    }

    /// Batch `b`'s key at its cost (never NaN; a cost under 0 as 0) set and added.
    fn insert(&mut self, b: usize) {
        let cost = self.costs[b];
        // `as` rounds down and saturates: the buckets are in the costs' order.
        let bucket = ((cost * self.scale) as usize).min(self.top);
        self.at[b] = bucket << self.shift | b;
        self.keys.insert(self.at[b]);
        let least = &mut self.least_cost[bucket];
        if cost < *least {
            (*least, self.at_least[bucket]) = (cost, 1);
        } else if cost == *least {
            self.at_least[bucket] += 1;
        }
    }

    /// Batch `b`'s key removed, its bucket's least cost counted again when `b` was the
    /// last batch of it.
    fn remove(&mut self, b: usize) {
        let key = self.at[b];
        self.keys.remove(key);
        let bucket = key >> self.shift;
        if self.costs[b] != self.least_cost[bucket] {
            return;
        }
        self.at_least[bucket] -= 1;
        if self.at_least[bucket] > 0 {
            return;
        }
        let (mask, first) = ((1 << self.shift) - 1, bucket << self.shift);
        let (mut least, mut count) = (f64::INFINITY, 0);
        let mut at = self.keys.next_before(first, first + mask + 1);
        while let Some(k) = at {
            let cost = self.costs[k & mask];
            if cost < least {
                (least, count) = (cost, 1);
            } else if cost == least {
                count += 1;
            }
            at = self.keys.next_before(k + 1, first + mask + 1);
        }
        (self.least_cost[bucket], self.at_least[bucket]) = (least, count);
    }

    /// Each batch's fit counted again, of `step` (when the step's cap is set): the longest.
    pub(super) fn count(&mut self, step: &[Bin], fit: impl Fn(&Bin) -> usize) -> usize {
        self.fits.clear();
        self.fits.extend(step.iter().map(fit));
        self.count_room()
    }

    fn count_room(&mut self) -> usize {
        self.room = self.fits.iter().copied().max().unwrap_or(0);
        self.at_room = self.fits.iter().filter(|&&f| f == self.room).count();
        self.room
    }

    /// The batch of least cost (the first such) that fits an item of `len` tokens, when
    /// the longest fit is at least `len` (else the last batch looked at).
    pub(super) fn cheapest_fitting(&mut self, len: usize) -> usize {
        let mut next = self.keys.next_from(self.least);
        self.least = next.unwrap_or(self.least);
        let mask = (1 << self.shift) - 1;
        let mut b = 0; // Not kept: every batch has a key.
        while let Some(first) = next {
            b = first & mask;
            let (bucket, end) = (first >> self.shift, (first | mask) + 1);
            if self.fits[b] >= len && self.costs[b] == self.least_cost[bucket] {
                return b;
            }
            // The bucket's batches by number, their costs never NaN, ordered by `<` as by
            // `total_cmp`, ties to the first.
            let mut best: Option<usize> = None;
            let mut at = Some(first);
            while let Some(k) = at {
                b = k & mask;
                if self.fits[b] >= len && best.is_none_or(|a| self.costs[b] < self.costs[a]) {
                    best = Some(b);
                }
                at = self.keys.next_before(k + 1, end);
            }
            if let Some(best) = best {
                return best;
            }
            next = self.keys.next_from(end);
        }
        b
    }

    /// Batch `b` now costs `cost` (no less than it did).
    pub(super) fn moved(&mut self, b: usize, cost: f64) {
        self.remove(b);
        self.costs[b] = cost;
        self.insert(b);
    }

    /// The longest item batch `b` fits.
    pub(super) fn fit(&self, b: usize) -> usize {
        self.fits[b]
    }

    /// Batch `b` now fits `fit` (at most what it fitted): the longest fit.
    pub(super) fn fits(&mut self, b: usize, fit: usize) -> usize {
        let was = std::mem::replace(&mut self.fits[b], fit);
        if was == self.room && fit != was {
            self.at_room -= 1;
            if self.at_room == 0 {
                return self.count_room();
            }
        }
        self.room
    }

    /// The keys removed, for the next step.
    pub(super) fn clear(&mut self) {
        for b in 0..self.at.len() {
            self.remove(b);
        }
        self.at.clear();
    }
}
