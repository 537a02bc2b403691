//! Balanced global steps ([`LoaderBuilder::with_balance`](crate::loader::LoaderBuilder::with_balance)):
//! the epoch's order taken in pools, each pool's items (samples, or packed windows) sorted
//! by cost and dealt into steps of `world` batches whose costs are close, the pool's steps
//! then put in a seeded order.
//!
//! ```text
//! order ──pools of lookahead steps' worth──▶ sorted by cost ──next items──▶ a step: LPT over
//!        (a pool's incomplete last step      (ties: order)                   its world batches
//!         carries over to the next pool)                    ──pool's steps──▶ seeded order
//! ```
//!
//! Every item goes to exactly one batch: a pool's items are either dealt into its steps or
//! carried over, and the epoch's leftovers make its last steps (with `drop_last`, a last
//! step without a batch for every rank is left out and counted in [`Plan::dropped`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{BatchInfo, Costs, Plan};
use crate::loader::config::{BatchSize, PlanConfig, Shuffle};
use crate::loader::order::{Slot, epoch_rng, permute};
use crate::rng::SplitMix64;

mod budget;

#[cfg(test)]
use budget::pass::longest_within;

/// Salt of the steps' shuffle, apart from the samples' and the windows'.
const STEP_SALT: u64 = 0x7374_6570_7321_6261;

/// An item of the order: where it stands in it, its tokens and cost.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Item {
    pos: usize,
    /// Its place in its pool, once sorted.
    slot: usize,
    len: usize,
    cost: f64,
}

/// The balanced plan of `order` (every rank's: ranks take turns in its steps).
pub(super) fn plan<L: Slot, S: Slot>(
    config: &PlanConfig,
    (lengths, costs): (&[L], &Costs<'_>),
    order: &[S],
    epoch: u64,
) -> Plan {
    let world = config.ranks.rank_and_world().1;
    let steps = config.balance_lookahead.saturating_mul(world);
    let capacity = match config.batch {
        BatchSize::Samples(b) | BatchSize::Tokens(b) => steps.saturating_mul(b),
    };
    let seed = match config.shuffle {
        Shuffle::None => None,
        Shuffle::Samples { seed }
        | Shuffle::Chunks { seed, .. }
        | Shuffle::Windowed { seed, .. } => Some(seed),
    };
    let mut out = Out {
        world,
        drop_last: config.drop_last,
        weight: config.weight(),
        rng: seed.map(|seed| epoch_rng(seed ^ STEP_SALT, epoch)),
        order,
        by_len: matches!(costs, Costs::Lengths(_)),
        work: Work::default(),
        plan: Plan {
            epoch,
            samples: Vec::with_capacity(order.len()),
            infos: Vec::new(),
            costs: Vec::new(),
            dropped: 0,
            windows: None,
            parts: Default::default(),
        },
    };
    let (mut pool, mut size) = (Vec::new(), 0usize);
    for (pos, s) in order.iter().enumerate() {
        // The order is shuffled: the lengths read are far apart, each a cache miss unless
        // asked for ahead.
        if let Some(ahead) = order.get(pos + PREFETCH_AHEAD) {
            prefetch(lengths.as_ptr().wrapping_add(ahead.get()));
        }
        let (id, len) = (s.get(), lengths[s.get()].get());
        let cost = costs.of(id, len);
        pool.push(Item {
            pos,
            slot: 0,
            len,
            cost,
        });
        size += match config.batch {
            BatchSize::Samples(_) => 1,
            BatchSize::Tokens(_) => len,
        };
        if size >= capacity {
            out.pool(config.batch, &mut pool, false);
            size = 0;
        }
    }
    out.pool(config.batch, &mut pool, true);
    out.plan
}

/// How far ahead in the order its samples' lengths are asked for.
const PREFETCH_AHEAD: usize = 16;

/// Asks for the cache line of `x` ahead of its use (nothing where there is no such
/// instruction). Never faults, whatever the address.
#[inline(always)]
fn prefetch<T>(x: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sse`, which the instruction needs, is in every x86_64 processor; a
    // prefetch reads nothing and never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(x.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// The plan being made.
struct Out<'a, S> {
    world: usize,
    drop_last: bool,
    /// The attention weight items' costs are counted with.
    weight: f64,
    /// The steps' shuffle, when the loader shuffles.
    rng: Option<SplitMix64>,
    /// The order, for the samples at its places.
    order: &'a [S],
    /// Costs are `n + w·n²` of the items' lengths `n`: they order as the lengths do.
    by_len: bool,
    work: Work,
    plan: Plan,
}

/// Memory kept from pool to pool.
#[derive(Default)]
struct Work {
    /// A pool's whole steps.
    steps: Steps,
    /// The epoch's last steps.
    tail: Steps,
    /// The steps' shuffled order.
    shuffled: Vec<usize>,
    /// Sort keys, and the pool sorted.
    keys: Vec<u128>,
    short_keys: Vec<u64>,
    sorted: Vec<Item>,
    deal: Deal,
    budget: budget::Scratch,
}

impl<S: Slot> Out<'_, S> {
    /// How budget steps are filled: by tokens when costs are lengths (`w` is 0).
    fn fill(&self) -> budget::Fill {
        match self.by_len && self.weight == 0.0 {
            true => budget::Fill::Tokens,
            false => budget::Fill::Costs,
        }
    }

    /// Deals `pool` (in the order's order) into steps and appends them, leaving in `pool`
    /// the items carried over to the next pool, in the order's order (none when it is the
    /// epoch's `last`).
    fn pool(&mut self, batch: BatchSize, pool: &mut Vec<Item>, last: bool) {
        let fill = self.fill();
        let work = &mut self.work;
        if !(self.by_len && sort_by_length(pool, &mut work.short_keys, &mut work.sorted)) {
            sort_pool(pool, &mut work.keys, &mut work.sorted);
        }
        work.steps.clear();
        work.tail.clear();
        let world = self.world;
        let mut carry = match batch {
            BatchSize::Samples(b) => by_count(
                pool,
                (world, b),
                last,
                (&mut work.steps, &mut work.tail),
                &mut work.deal,
            ),
            BatchSize::Tokens(t) => budget::by_budget(
                pool,
                world,
                (t, self.weight, fill),
                last,
                (&mut work.steps, &mut work.tail),
                &mut work.budget,
            ),
        };
        work.shuffled.clear();
        work.shuffled.extend(0..work.steps.len());
        if let Some(rng) = &mut self.rng {
            permute(rng, &mut work.shuffled);
        }
        for &s in &work.shuffled {
            emit(&mut self.plan, self.order, &mut work.steps, s);
        }
        for s in 0..work.tail.len() {
            let batches = work.tail.step(s);
            // With `drop_last`, a step short of a batch per rank (or of a batch's samples).
            let short = batches.len() < world
                || matches!(batch, BatchSize::Samples(b)
                    if batches.clone().any(|k| work.tail.batch_len(k) < b));
            if self.drop_last && short {
                self.plan.dropped += batches.map(|k| work.tail.batch_len(k)).sum::<usize>();
            } else {
                emit(&mut self.plan, self.order, &mut work.tail, s);
            }
        }
        // Carried items come before the next pool's: in the order's order they are its
        // start. The pool's memory is kept for the next.
        carry.sort_unstable_by_key(|i| i.pos);
        pool.clear();
        pool.extend_from_slice(&carry);
    }
}

/// Appends step `s` of `steps` to `plan`, each batch's samples in the epoch's order.
fn emit<S: Slot>(plan: &mut Plan, order: &[S], steps: &mut Steps, s: usize) {
    for k in steps.step(s) {
        let batch = steps.batches[k];
        let places = &mut steps.places[batch.start..batch.end];
        places.sort_unstable();
        let start = plan.samples.len();
        plan.samples.extend(places.iter().map(|&p| order[p].get()));
        plan.infos.push(BatchInfo {
            start,
            end: plan.samples.len(),
            tokens: batch.tokens,
            max_len: batch.max_len,
            oversize: batch.oversize,
        });
        plan.costs.push(batch.cost);
    }
}

/// Sorts `pool`, in the order's order, by cost, largest first, ties in the order's order,
/// and numbers its items' slots: one sort of 128-bit keys (the cost's bits in an order
/// that is `f64::total_cmp`'s, reversed; then the place in the pool).
fn sort_pool(pool: &mut Vec<Item>, keys: &mut Vec<u128>, sorted: &mut Vec<Item>) {
    debug_assert!(pool.is_sorted_by_key(|i| i.pos));
    keys.clear();
    keys.extend(pool.iter().enumerate().map(|(k, item)| {
        let bits = item.cost.to_bits();
        // `total_cmp`'s order: negative values' bits flipped, the sign bit set on others.
        let total = if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        };
        (u128::from(!total) << 64) | k as u128
    }));
    keys.sort_unstable();
    gather(pool, keys.iter().map(|&key| key as u64 as usize), sorted);
}

/// `pool` made the items at `places` in turn, numbered by their new places.
fn gather(pool: &mut Vec<Item>, places: impl Iterator<Item = usize>, sorted: &mut Vec<Item>) {
    sorted.clear();
    sorted.extend(places.enumerate().map(|(slot, k)| Item { slot, ..pool[k] }));
    std::mem::swap(pool, sorted);
}

/// [`sort_pool`] for costs that grow with the length (`n + w·n²`, `w ≥ 0`, strictly for
/// lengths below 2³²: `1 + w·(2n + 1)` apart, far more than their rounding), in 64-bit
/// keys: the length, reversed, then the place in the pool. Returns false, leaving `pool`
/// as it was, when a length or a place does not fit in 32 bits.
fn sort_by_length(pool: &mut Vec<Item>, keys: &mut Vec<u64>, sorted: &mut Vec<Item>) -> bool {
    let fits = |x: usize| u32::try_from(x).is_ok();
    let longest = pool.iter().map(|i| i.len).max().unwrap_or(0);
    if !fits(pool.len()) || !fits(longest) {
        return false;
    }
    if longest <= 2 * pool.len() + 1024 {
        count_by_length(pool, longest, keys, sorted);
        return true;
    }
    keys.clear();
    keys.extend(
        (pool.iter().enumerate()).map(|(k, i)| (u64::from(!(i.len as u32)) << 32) | k as u64),
    );
    keys.sort_unstable();
    gather(pool, keys.iter().map(|&key| key as u32 as usize), sorted);
    true
}

/// [`sort_by_length`] as a counting sort, for lengths of at most `longest` (about the
/// pool's size or less): each item's place is the count of those longer, then of those as
/// long before it in the pool.
fn count_by_length(
    pool: &mut Vec<Item>,
    longest: usize,
    starts: &mut Vec<u64>,
    sorted: &mut Vec<Item>,
) {
    starts.clear();
    starts.resize(longest + 1, 0);
    for i in pool.iter() {
        starts[i.len] += 1;
    }
    let mut at = 0;
    for start in starts.iter_mut().rev() {
        (*start, at) = (at, at + *start);
    }
    sorted.clear();
    sorted.resize(pool.len(), pool.first().copied().unwrap_or(EMPTY));
    for item in pool.iter() {
        let slot = &mut starts[item.len];
        sorted[*slot as usize] = Item {
            slot: *slot as usize,
            ..*item
        };
        *slot += 1;
    }
    std::mem::swap(pool, sorted);
}

/// A placeholder item, overwritten.
const EMPTY: Item = Item {
    pos: 0,
    slot: 0,
    len: 0,
    cost: 0.0,
};

/// A pool's steps, their batches' samples in one buffer.
#[derive(Debug, Default, PartialEq)]
struct Steps {
    /// The batches' samples' places in the order, batch after batch.
    places: Vec<usize>,
    batches: Vec<Batch>,
    /// Where each step's batches end in `batches`.
    ends: Vec<usize>,
}

/// A batch of [`Steps`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct Batch {
    start: usize,
    end: usize,
    tokens: usize,
    max_len: usize,
    cost: f64,
    oversize: bool,
}

impl Steps {
    fn clear(&mut self) {
        self.places.clear();
        self.batches.clear();
        self.ends.clear();
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The batches of step `s`.
    fn step(&self, s: usize) -> std::ops::Range<usize> {
        let start = if s == 0 { 0 } else { self.ends[s - 1] };
        start..self.ends[s]
    }

    fn batch_len(&self, k: usize) -> usize {
        self.batches[k].end - self.batches[k].start
    }

    /// Adds a batch of `items`, `tokens` and `cost` to the step being made.
    fn push_batch(&mut self, items: &[Item], tokens: usize, cost: f64, oversize: bool) {
        let start = self.places.len();
        self.places.extend(items.iter().map(|i| i.pos));
        self.batches.push(Batch {
            start,
            end: self.places.len(),
            tokens,
            max_len: items.iter().map(|i| i.len).max().unwrap_or(0),
            cost,
            oversize,
        });
    }

    /// Ends the step being made.
    fn end_step(&mut self) {
        self.ends.push(self.batches.len());
    }
}

/// Batches of `b` samples: each step the next `world·b` items of the sorted pool, dealt by
/// [`Deal::deal`] into `steps`; the rest carried over (returned), or at the end a last
/// step of `⌈rest / b⌉` batches in `tail`.
fn by_count(
    pool: &[Item],
    (world, b): (usize, usize),
    last: bool,
    (steps, tail): (&mut Steps, &mut Steps),
    deal: &mut Deal,
) -> Vec<Item> {
    let per = world * b;
    let whole = pool.len() / per * per;
    for chunk in pool[..whole].chunks(per) {
        deal.deal(chunk, world, b, steps);
    }
    let rest = &pool[whole..];
    match (last, rest.is_empty()) {
        (false, _) => rest.to_vec(),
        (true, true) => Vec::new(),
        (true, false) => {
            deal.deal(rest, rest.len().div_ceil(b), b, tail);
            Vec::new()
        }
    }
}

/// The memory of [`Deal::deal`], kept from step to step.
#[derive(Default)]
struct Deal {
    open: BinaryHeap<Reverse<(u64, usize)>>,
    /// Each item's batch, and each batch's cost, tokens, items and next place.
    to: Vec<usize>,
    costs: Vec<f64>,
    tokens: Vec<usize>,
    counts: Vec<usize>,
    next: Vec<usize>,
}

impl Deal {
    /// LPT with cardinality: `items` (sorted by cost, largest first) into `bins` batches
    /// of at most `cap` items, each item to the batch of least cost (the first such) not
    /// yet full; the batches added to `steps` as one step.
    fn deal(&mut self, items: &[Item], bins: usize, cap: usize, steps: &mut Steps) {
        self.open.clear();
        self.open.extend((0..bins).map(|b| Reverse((0, b))));
        self.to.clear();
        for v in [&mut self.tokens, &mut self.counts] {
            v.clear();
            v.resize(bins, 0);
        }
        self.costs.clear();
        self.costs.resize(bins, 0.0);
        for item in items {
            let Some(Reverse((_, b))) = self.open.pop() else {
                break; // Not reached: bins · cap ≥ items.
            };
            self.to.push(b);
            self.costs[b] += item.cost;
            self.tokens[b] += item.len;
            self.counts[b] += 1;
            if self.counts[b] < cap {
                // Costs are at least 0, so their bits order as they do.
                self.open.push(Reverse((self.costs[b].to_bits(), b)));
            }
        }
        // Each batch's items in the order dealt, batch after batch.
        let base = steps.places.len();
        self.next.clear();
        let mut start = base;
        for b in 0..bins {
            self.next.push(start);
            steps.batches.push(Batch {
                start,
                end: start + self.counts[b],
                tokens: self.tokens[b],
                max_len: 0,
                cost: self.costs[b],
                oversize: false,
            });
            start += self.counts[b];
        }
        steps.places.resize(start, 0);
        let first = steps.batches.len() - bins;
        for (item, &b) in items.iter().zip(&self.to) {
            steps.places[self.next[b]] = item.pos;
            self.next[b] += 1;
            let max_len = &mut steps.batches[first + b].max_len;
            *max_len = (*max_len).max(item.len);
        }
        steps.end_step();
    }
}

#[cfg(test)]
mod tests;
