//! Balanced steps of batches of at most `t` tokens: long items seed steps, then each step
//! is filled largest first within the step's cap and trimmed while that lowers its max /
//! mean cost ([`by_budget`]; docs/design.md "Balanced global steps").

use super::{Item, Steps, sort_pool};
use crate::loader::config::cost;
use cheapest::Cheapest;

mod cheapest;
#[cfg(test)]
pub(super) mod pass;

/// How [`Filler::fill_and_trim`] fills a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fill {
    /// Each item's cost is its length (`w` is 0, the items samples): [`Filler::fill_by_tokens`].
    Tokens,
    /// [`Filler::fill`].
    Costs,
    /// The pass over the step's batches per item that [`Filler::fill`] does as the batches
    /// kept by cost, the model of the property tests.
    #[cfg(test)]
    Pass,
}

/// One rank's batch of a step being dealt.
#[derive(Clone, Debug, Default)]
pub(super) struct Bin {
    items: Vec<Item>,
    tokens: usize,
    cost: f64,
    /// A single sample over the token budget: no room for more.
    oversize: bool,
}

impl Bin {
    fn push(&mut self, item: Item) {
        self.tokens += item.len;
        self.cost += item.cost;
        self.items.push(item);
    }

    /// Empty again, its memory kept.
    fn clear(&mut self) {
        self.items.clear();
        (self.tokens, self.cost, self.oversize) = (0, 0.0, false);
    }

    /// The batch of `item` alone (`oversize`: over the budget, closed to others).
    fn alone(&mut self, item: Item, oversize: bool) {
        self.clear();
        self.oversize = oversize;
        self.push(item);
    }
}

/// The batches of a step being dealt, kept from step to step with their memory.
#[derive(Default)]
pub(super) struct Scratch {
    step: Vec<Bin>,
    cheapest: Cheapest,
    left: Left,
    starts: Vec<usize>,
    /// The open batches' keys of [`Filler::fill_by_tokens`], empty between steps.
    keys: Left,
}

/// `step` made `n` empty batches.
fn reset(step: &mut Vec<Bin>, n: usize) {
    step.resize_with(n, Bin::default);
    step.truncate(n);
    step.iter_mut().for_each(Bin::clear);
}

/// Appends the batches of `step` to `steps` as one step.
fn add(steps: &mut Steps, step: &[Bin]) {
    for bin in step {
        steps.push_batch(&bin.items, bin.tokens, bin.cost, bin.oversize);
    }
    steps.end_step();
}

/// Batches of at most `t` tokens. The items over `t` (first in the sorted pool) make
/// steps of their own, `world` at a time; the long items (over `t / 2`: no two share a
/// batch) seed steps, `world` at a time, so that a long document is balanced by others as
/// long; then each step is filled by [`Filler::fill_and_trim`] until no rank has room for
/// any item left. The steps go to `steps`; the step the pool runs out in, and the items
/// over `t` or long ones short of a step, are returned to carry over, unless it is the
/// epoch's `last` pool: then they make its last steps in `tail` ([`last_steps`]).
pub(super) fn by_budget(
    pool: &[Item],
    world: usize,
    (t, w, fill): (usize, f64, Fill),
    last: bool,
    (steps, tail): (&mut Steps, &mut Steps),
    scratch: &mut Scratch,
) -> Vec<Item> {
    let over_end = pool.partition_point(|i| i.len > t);
    let long_end = pool.partition_point(|i| i.len > t / 2);
    let (over, long) = (&pool[..over_end], &pool[over_end..long_end]);
    let (whole_over, whole_long) = (over.len() / world * world, long.len() / world * world);
    for chunk in over[..whole_over].chunks(world) {
        for item in chunk {
            steps.push_batch(std::slice::from_ref(item), item.len, 0.0 + item.cost, true);
        }
        steps.end_step();
    }
    let mut seeds = long[..whole_long].chunks(world);
    let mut filler = Filler::new(
        &pool[long_end..],
        long_end,
        (&mut scratch.left, &mut scratch.starts),
        fill,
    );
    loop {
        let seeded = seeds.next();
        let more_seeds = seeds.len() > 0;
        reset(&mut scratch.step, world);
        for (bin, item) in scratch.step.iter_mut().zip(seeded.unwrap_or_default()) {
            bin.alone(*item, false);
        }
        let fits = (&mut scratch.cheapest, &mut scratch.keys);
        filler.fill_and_trim(&mut scratch.step, fits, (t, w));
        if filler.left.is_empty() && !more_seeds {
            break;
        }
        add(steps, &scratch.step);
    }
    let mut rest: Vec<Item> = (scratch.step.iter())
        .flat_map(|b| b.items.iter().copied())
        .collect();
    rest.extend_from_slice(&over[whole_over..]);
    rest.extend_from_slice(&long[whole_long..]);
    if last {
        last_steps(rest, world, (t, w, fill), tail, scratch);
        return Vec::new();
    }
    rest
}

/// The epoch's last steps, of the items `rest` left: those over the budget first (a batch
/// each), with the others dealt as [`Filler::fill_and_trim`] does; the last step may have
/// fewer batches than ranks.
fn last_steps(
    mut rest: Vec<Item>,
    world: usize,
    (t, w, fill): (usize, f64, Fill),
    tail: &mut Steps,
    scratch: &mut Scratch,
) {
    rest.sort_unstable_by_key(|i| i.pos);
    sort_pool(&mut rest, &mut Vec::new(), &mut Vec::new());
    let over_end = rest.partition_point(|i| i.len > t);
    let mut over = rest[..over_end].chunks(world);
    let mut filler = Filler::new(
        &rest[over_end..],
        over_end,
        (&mut scratch.left, &mut scratch.starts),
        fill,
    );
    loop {
        reset(&mut scratch.step, world);
        for (bin, item) in scratch.step.iter_mut().zip(over.next().unwrap_or_default()) {
            bin.alone(*item, true);
        }
        let fits = (&mut scratch.cheapest, &mut scratch.keys);
        filler.fill_and_trim(&mut scratch.step, fits, (t, w));
        scratch.step.retain(|b| !b.items.is_empty());
        if scratch.step.is_empty() {
            return;
        }
        add(tail, &scratch.step);
    }
}

/// The regular items of a pool (sorted by cost, so by length, largest first) not yet in a
/// step, by their place in the pool.
struct Filler<'a> {
    items: &'a [Item],
    /// The place of `items[0]` in the pool.
    first: usize,
    left: &'a mut Left,
    /// `starts[n]`: the first of `items` of at most `n` tokens, for `n` below the first's
    /// length (empty when that is long against the items' number: then a binary search).
    starts: &'a mut Vec<usize>,
    fill: Fill,
}

impl<'a> Filler<'a> {
    fn new(
        items: &'a [Item],
        first: usize,
        (left, starts): (&'a mut Left, &'a mut Vec<usize>),
        fill: Fill,
    ) -> Self {
        left.fill(items.len());
        starts.clear();
        let longest = items.first().map_or(0, |i| i.len);
        if longest <= 4 * items.len() + 64 {
            let mut k = items.len();
            for n in 0..longest {
                while k > 0 && items[k - 1].len <= n {
                    k -= 1;
                }
                starts.push(k);
            }
        }
        Filler {
            items,
            first,
            left,
            starts,
            fill,
        }
    }

    /// The first item of at most `room` tokens. Items are sorted by cost, which grows with
    /// the length: by length too.
    fn first_within(&self, room: usize) -> usize {
        match self.items.first() {
            Some(i) if room >= i.len => 0,
            _ if !self.starts.is_empty() => self.starts[room],
            _ => self.items.partition_point(|i| i.len > room),
        }
    }

    /// The first item left of at most `room` tokens, from `last` on: the item placed last
    /// while a step is filled, when the room only shrinks (and no item is put back), so
    /// that the items placed before it are not looked through again.
    fn next_within(&self, room: usize, last: usize) -> Option<usize> {
        self.left.next_from(self.first_within(room).max(last))
    }

    /// Fills `step` ([`Filler::fill`], or as it does [`Filler::fill_by_tokens`] when each
    /// item's cost is its length and the keys are few enough: [`Fill`]); unless the items ran out in
    /// it, then takes the cheapest items out of its costliest batch while that brings the
    /// step's max / mean cost down (a batch holding a long document, with the rest of the
    /// budget filled, may cost more than the others can with their budget): they stay in
    /// the pool.
    fn fill_and_trim(
        &mut self,
        step: &mut [Bin],
        (cheapest, keys): (&mut Cheapest, &mut Left),
        (t, w): (usize, f64),
    ) {
        match (self.fill, key_bits(step.len(), t)) {
            (Fill::Tokens, Some(shift)) => self.fill_by_tokens(step, keys, shift, t),
            #[cfg(test)]
            (Fill::Pass, _) => self.fill_by_pass(step, t, w),
            _ => self.fill(step, cheapest, t, w),
        }
        while !self.left.is_empty() {
            let total: f64 = step.iter().map(|b| b.cost).sum();
            let costs = step.iter().map(|b| b.cost).enumerate();
            let Some((m, max)) = costs.max_by(|x, y| x.1.total_cmp(&y.1)) else {
                return;
            };
            if step[m].oversize || step[m].items.len() <= 1 {
                return;
            }
            let cheapest = (step[m].items.iter().enumerate())
                .filter(|(_, i)| i.slot >= self.first)
                .min_by(|x, y| x.1.cost.total_cmp(&y.1.cost))
                .map(|(k, i)| (k, *i));
            let Some((k, item)) = cheapest else {
                return;
            };
            let others = (step.iter().enumerate())
                .filter(|&(b, _)| b != m)
                .fold(0.0, |a: f64, (_, b)| a.max(b.cost));
            let after = (max - item.cost).max(others) / (total - item.cost);
            if after >= max / total {
                return;
            }
            let bin = &mut step[m];
            bin.items.swap_remove(k);
            bin.tokens -= item.len;
            bin.cost = bin.items.iter().map(|i| i.cost).sum();
            self.left.insert(item.slot - self.first);
        }
    }

    /// [`Filler::fill`] when each item's cost is its length (`w` is 0): a batch's cost is
    /// its tokens and every cap `t`, so what a batch fits is `t` less its cost, and the
    /// batch of least cost (the first such) fits the longest item any batch fits: the item
    /// placed. The open batches are kept as keys `cost·2^shift + b` in `keys` (empty again
    /// at the end), whose least is that batch, with no pass over the batches per item; it
    /// never decreases while the step is filled (costs only grow).
    fn fill_by_tokens(&mut self, step: &mut [Bin], keys: &mut Left, shift: u32, t: usize) {
        let key = |b: usize, bin: &Bin| (bin.tokens << shift) | b;
        keys.reserve_empty((t + 1) << shift);
        let open = || step.iter().enumerate().filter(|(_, bin)| !bin.oversize);
        open().for_each(|(b, bin)| keys.insert(key(b, bin)));
        // The least key, and the item placed last (the room only shrinks).
        let (mut least, mut last) = (0, 0);
        while !self.left.is_empty()
            && let Some(k) = keys.next_from(least)
        {
            let (room, b) = (t - (k >> shift), k & ((1 << shift) - 1));
            if room == 0 {
                break;
            }
            let Some(i) = self.next_within(room, last) else {
                break;
            };
            step[b].push(self.items[i]);
            self.left.remove(i);
            keys.remove(k);
            keys.insert(key(b, &step[b]));
            (least, last) = (k, i);
        }
        let open = step.iter().enumerate().filter(|(_, bin)| !bin.oversize);
        open.for_each(|(b, bin)| keys.remove(key(b, bin)));
    }

    /// LPT with room: the largest item left that fits some rank's batch goes to the batch
    /// of least cost (the first such) that it fits in, until none fits. An empty batch fits
    /// any item; another fits an item when it has the tokens for it and its cost stays
    /// within the step's cap: what the step's first (largest) item (or costliest seed)
    /// costs with the rest of the budget in tokens of no attention cost, `c(L) + t - L`
    /// (`t` when `w` is 0), so that a rank with a long document takes fewer tokens besides.
    /// The batches are kept in the order of their costs in `cheapest`, and the longest item
    /// any fits is not counted: `room` is at least it (what a batch fits only shrinks while
    /// the step is filled), brought under an item's length when no batch fits the item (to
    /// the most tokens a batch has left when none has the item's).
    fn fill(&mut self, step: &mut [Bin], cheapest: &mut Cheapest, t: usize, w: f64) {
        // A seeded step's cap: its costliest seed's.
        let seeds = step.iter().filter(|b| !b.oversize && !b.items.is_empty());
        let mut cap = seeds
            .map(|b| b.cost + (t - b.tokens) as f64)
            .reduce(f64::max);
        cheapest.start(step);
        let mut room = if step.iter().all(|b| b.oversize) {
            0
        } else {
            t
        };
        // The item placed last, and an item's length and its cost `c(len)`.
        let (mut last, mut len_cost) = (0, (0, 0.0));
        while !self.left.is_empty() && room > 0 {
            let Some(i) = self.next_within(room, last) else {
                break;
            };
            let item = self.items[i];
            // An item of 0 tokens goes to the cheapest batch when one fits an item of 1.
            let len = item.len.max(1);
            if len_cost.0 != len {
                len_cost = (len, cost(len, w));
            }
            let fits = (cap.unwrap_or(f64::INFINITY), t);
            match cheapest.cheapest_fitting(step, len_cost, fits) {
                Ok(_) if item.len == 0 => cheapest.push_empty(step, item),
                Ok(k) => cheapest.push(step, k, item),
                Err(fit) => {
                    room = fit;
                    continue;
                }
            }
            self.left.remove(i);
            last = i;
            if cap.is_none() {
                cap = Some(item.cost + (t - item.len) as f64);
            }
        }
    }
}

/// The bits of a batch's number in the keys of [`Filler::fill_by_tokens`], for `n` batches
/// and a budget of `t` tokens, when the keys (`(t + 1)·2^bits`) are few enough to keep a bit
/// each (2²⁴ at most, 2 MiB).
fn key_bits(n: usize, t: usize) -> Option<u32> {
    let shift = n.next_power_of_two().trailing_zeros();
    let keys = t.checked_add(1)?.checked_mul(1 << shift)?;
    (keys <= 1 << 24).then_some(shift)
}

/// A set of places `0..n` (the items left; the open batches' keys), in two levels of
/// bits: a word per 64 places, and a bit per word that has any set, for the next place in
/// the set from a given one.
#[derive(Default)]
pub(super) struct Left {
    words: Vec<u64>,
    /// Bit `j` set when `words[j]` is not 0.
    summary: Vec<u64>,
    count: usize,
}

impl Left {
    /// All of `0..n`.
    fn fill(&mut self, n: usize) {
        let words = n.div_ceil(64);
        self.words.clear();
        self.words.resize(words, u64::MAX);
        if !n.is_multiple_of(64) {
            self.words[words - 1] = (1 << (n % 64)) - 1;
        }
        self.summary.clear();
        self.summary.resize(words.div_ceil(64), u64::MAX);
        if !words.is_multiple_of(64) {
            self.summary[words / 64] = (1 << (words % 64)) - 1;
        }
        self.count = n;
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Makes room for places `0..n` in the set, which is empty (and stays so).
    fn reserve_empty(&mut self, n: usize) {
        debug_assert!(self.is_empty());
        let words = n.div_ceil(64);
        if self.words.len() < words {
            self.words.resize(words, 0);
            self.summary.resize(words.div_ceil(64), 0);
        }
    }

    /// Adds `i` (not in the set).
    fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
        self.summary[i / 4096] |= 1 << (i / 64 % 64);
        self.count += 1;
    }

    /// Removes `i` (in the set).
    fn remove(&mut self, i: usize) {
        let word = &mut self.words[i / 64];
        *word &= !(1 << (i % 64));
        if *word == 0 {
            self.summary[i / 4096] &= !(1 << (i / 64 % 64));
        }
        self.count -= 1;
    }

    /// The least place in the set from `i` on.
    fn next_from(&self, i: usize) -> Option<usize> {
        let j = i / 64;
        let here = self.words.get(j)? & (u64::MAX << (i % 64));
        if here != 0 {
            return Some(j * 64 + here.trailing_zeros() as usize);
        }
        // The next word with any set, from the summary.
        let j = j + 1;
        let (mut s, mut mask) = (j / 64, u64::MAX.checked_shl((j % 64) as u32).unwrap_or(0));
        while let Some(&bits) = self.summary.get(s) {
            let bits = bits & mask;
            if bits != 0 {
                let word = s * 64 + bits.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
            (s, mask) = (s + 1, u64::MAX);
        }
        None
    }
}
