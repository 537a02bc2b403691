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
use std::collections::{BTreeSet, BinaryHeap};

use super::{BatchInfo, Costs, Plan};
use crate::loader::config::{BatchSize, PlanConfig, Shuffle, cost};
use crate::loader::order::{Slot, epoch_rng, permute};
use crate::rng::SplitMix64;

/// Salt of the steps' shuffle, apart from the samples' and the windows'.
const STEP_SALT: u64 = 0x7374_6570_7321_6261;

/// An item of the order: where it stands in it, its sample (or window), tokens and cost.
#[derive(Clone, Copy, Debug)]
struct Item {
    pos: usize,
    /// Its place in its pool, once sorted.
    slot: usize,
    id: usize,
    len: usize,
    cost: f64,
}

/// One rank's batch of a step being dealt.
#[derive(Clone, Debug, Default)]
struct Bin {
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
}

/// A global step: one batch per rank (fewer only in the epoch's last step).
type Step = Vec<Bin>;

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
        let (id, len) = (s.get(), lengths[s.get()].get());
        pool.push(Item {
            pos,
            slot: 0,
            id,
            len,
            cost: costs.of(id, len),
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

/// The plan being made.
struct Out {
    world: usize,
    drop_last: bool,
    /// The attention weight items' costs are counted with.
    weight: f64,
    /// The steps' shuffle, when the loader shuffles.
    rng: Option<SplitMix64>,
    plan: Plan,
}

impl Out {
    /// Deals `pool` into steps and appends them, leaving in `pool` the items carried over
    /// to the next pool (none when it is the epoch's `last`).
    fn pool(&mut self, batch: BatchSize, pool: &mut Vec<Item>, last: bool) {
        // Costs are finite and at least 0; positions differ: a total, stable order.
        pool.sort_unstable_by(|a, b| b.cost.total_cmp(&a.cost).then(a.pos.cmp(&b.pos)));
        for (slot, item) in pool.iter_mut().enumerate() {
            item.slot = slot;
        }
        let dealt = match batch {
            BatchSize::Samples(b) => by_count(pool, self.world, b, last),
            BatchSize::Tokens(t) => by_budget(pool, self.world, (t, self.weight), last),
        };
        let Dealt {
            mut steps,
            carry,
            tail,
        } = dealt;
        if let Some(rng) = &mut self.rng {
            permute(rng, &mut steps);
        }
        for step in steps {
            self.push(step);
        }
        for step in tail {
            // With `drop_last`, a step short of a batch per rank (or of a batch's samples).
            let short = step.len() < self.world
                || matches!(batch, BatchSize::Samples(b) if step.iter().any(|bin| bin.items.len() < b));
            if self.drop_last && short {
                self.plan.dropped += step.iter().map(|b| b.items.len()).sum::<usize>();
            } else {
                self.push(step);
            }
        }
        *pool = carry;
    }

    /// Appends a step's batches, each batch's samples in the epoch's order.
    fn push(&mut self, step: Step) {
        for mut bin in step {
            bin.items.sort_unstable_by_key(|i| i.pos);
            let start = self.plan.samples.len();
            self.plan.samples.extend(bin.items.iter().map(|i| i.id));
            self.plan.infos.push(BatchInfo {
                start,
                end: self.plan.samples.len(),
                tokens: bin.tokens,
                max_len: bin.items.iter().map(|i| i.len).max().unwrap_or(0),
                oversize: bin.oversize,
            });
            self.plan.costs.push(bin.cost);
        }
    }
}

/// A pool dealt: its whole steps (to be shuffled), the items carried over, and (at the
/// epoch's end) its last steps, in order, the last of which may have fewer batches than
/// ranks.
struct Dealt {
    steps: Vec<Step>,
    carry: Vec<Item>,
    tail: Vec<Step>,
}

/// Batches of `b` samples: each step the next `world·b` items of the sorted pool, dealt by
/// [`deal`]; the rest carried over, or at the end a last step of `⌈rest / b⌉` batches.
fn by_count(pool: &[Item], world: usize, b: usize, last: bool) -> Dealt {
    let per = world * b;
    let whole = pool.len() / per * per;
    let steps = pool[..whole]
        .chunks(per)
        .map(|c| deal(c, world, b))
        .collect();
    let rest = &pool[whole..];
    let (carry, tail) = match (last, rest.is_empty()) {
        (false, _) => (rest.to_vec(), Vec::new()),
        (true, true) => (Vec::new(), Vec::new()),
        (true, false) => (Vec::new(), vec![deal(rest, rest.len().div_ceil(b), b)]),
    };
    Dealt { steps, carry, tail }
}

/// LPT with cardinality: `items` (sorted by cost, largest first) into `bins` batches of at
/// most `cap` items, each item to the batch of least cost (the first such) not yet full.
fn deal(items: &[Item], bins: usize, cap: usize) -> Step {
    let mut step: Step = vec![Bin::default(); bins];
    // Costs are at least 0, so their bits order as they do.
    let mut open: BinaryHeap<Reverse<(u64, usize)>> = (0..bins).map(|b| Reverse((0, b))).collect();
    for &item in items {
        let Some(Reverse((_, b))) = open.pop() else {
            break; // Not reached: bins · cap ≥ items.
        };
        step[b].push(item);
        if step[b].items.len() < cap {
            open.push(Reverse((step[b].cost.to_bits(), b)));
        }
    }
    step
}

/// Batches of at most `t` tokens. The items over `t` (first in the sorted pool) make
/// steps of their own, `world` at a time; the long items (over `t / 2`: no two share a
/// batch) seed steps, `world` at a time, so that a long document is balanced by others as
/// long; then each step is filled by [`Filler::fill_and_trim`] until no rank has room for
/// any item left. The step the pool runs out in, and the items over `t` or long ones short
/// of a step, carry over; at the epoch's end they make its last steps ([`last_steps`]).
fn by_budget(pool: &[Item], world: usize, (t, w): (usize, f64), last: bool) -> Dealt {
    let over_end = pool.partition_point(|i| i.len > t);
    let long_end = pool.partition_point(|i| i.len > t / 2);
    let (over, long) = (&pool[..over_end], &pool[over_end..long_end]);
    let (whole_over, whole_long) = (over.len() / world * world, long.len() / world * world);
    let mut steps: Vec<Step> = (over[..whole_over].chunks(world))
        .map(|c| c.iter().map(|i| alone(*i, true)).collect())
        .collect();
    let mut seeds = (long[..whole_long].chunks(world))
        .map(|c| c.iter().map(|i| alone(*i, false)).collect::<Step>());
    let mut filler = Filler::new(&pool[long_end..], long_end);
    let ran_out = loop {
        let seeded = seeds.next();
        let more_seeds = seeds.len() > 0;
        let mut step = seeded.unwrap_or_else(|| vec![Bin::default(); world]);
        filler.fill_and_trim(&mut step, t, w);
        if filler.left.is_empty() && !more_seeds {
            break step;
        }
        steps.push(step);
    };
    let mut rest: Vec<Item> = ran_out.into_iter().flat_map(|b| b.items).collect();
    rest.extend_from_slice(&over[whole_over..]);
    rest.extend_from_slice(&long[whole_long..]);
    if !last {
        return Dealt {
            steps,
            carry: rest,
            tail: Vec::new(),
        };
    }
    Dealt {
        steps,
        carry: Vec::new(),
        tail: last_steps(rest, world, (t, w)),
    }
}

/// A batch of `item` alone (`oversize`: over the budget, closed to others).
fn alone(item: Item, oversize: bool) -> Bin {
    let mut bin = Bin {
        oversize,
        ..Bin::default()
    };
    bin.push(item);
    bin
}

/// The epoch's last steps, of the items `rest` left: those over the budget first (a batch
/// each), with the others dealt as [`Filler::fill_and_trim`] does; the last step may have
/// fewer batches than ranks.
fn last_steps(mut rest: Vec<Item>, world: usize, (t, w): (usize, f64)) -> Vec<Step> {
    rest.sort_unstable_by(|a, b| b.cost.total_cmp(&a.cost).then(a.pos.cmp(&b.pos)));
    for (slot, item) in rest.iter_mut().enumerate() {
        item.slot = slot;
    }
    let over_end = rest.partition_point(|i| i.len > t);
    let mut over = rest[..over_end].chunks(world);
    let mut filler = Filler::new(&rest[over_end..], over_end);
    let mut steps = Vec::new();
    loop {
        let mut step: Step = vec![Bin::default(); world];
        for (bin, item) in step.iter_mut().zip(over.next().unwrap_or_default()) {
            *bin = alone(*item, true);
        }
        filler.fill_and_trim(&mut step, t, w);
        step.retain(|b| !b.items.is_empty());
        if step.is_empty() {
            return steps;
        }
        steps.push(step);
    }
}

/// The regular items of a pool (sorted by cost, so by length, largest first) not yet in a
/// step, by their place in the pool.
struct Filler<'a> {
    items: &'a [Item],
    /// The place of `items[0]` in the pool.
    first: usize,
    left: BTreeSet<usize>,
}

impl<'a> Filler<'a> {
    fn new(items: &'a [Item], first: usize) -> Self {
        Filler {
            items,
            first,
            left: (0..items.len()).collect(),
        }
    }

    /// Fills `step` ([`Filler::fill`]); unless the items ran out in it, then takes the
    /// cheapest items out of its costliest batch while that brings the step's max / mean
    /// cost down (a batch holding a long document, with the rest of the budget filled, may
    /// cost more than the others can with their budget): they stay in the pool.
    fn fill_and_trim(&mut self, step: &mut Step, t: usize, w: f64) {
        self.fill(step, t, w);
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

    /// LPT with room: the largest item left that fits some rank's batch goes to the batch
    /// of least cost (the first such) that it fits in, until none fits. An empty batch fits
    /// any item; another fits an item when it has the tokens for it and its cost stays
    /// within the step's cap: what
    /// the step's first (largest) item (or costliest seed) costs with the rest of the
    /// budget in tokens of no attention cost, `c(L) + t - L` (`t` when `w` is 0), so that a
    /// rank with a long document takes fewer tokens besides.
    fn fill(&mut self, step: &mut Step, t: usize, w: f64) {
        // A seeded step's cap: its costliest seed's.
        let seeds = step.iter().filter(|b| !b.oversize && !b.items.is_empty());
        let mut cap = seeds
            .map(|b| b.cost + (t - b.tokens) as f64)
            .reduce(f64::max);
        let mut fits = vec![0; step.len()];
        while !self.left.is_empty() {
            let cap_now = cap.unwrap_or(f64::INFINITY);
            for (fit, b) in fits.iter_mut().zip(step.iter()) {
                *fit = match (b.oversize, b.items.is_empty()) {
                    (true, _) => 0,
                    // An empty batch takes any item: a rank never gets an empty batch while
                    // items are left (with a tiny budget, `w > 0` can put the cap under
                    // any item's cost).
                    (false, true) => t,
                    (false, false) => (t - b.tokens).min(longest_within(cap_now - b.cost, w)),
                };
            }
            let Some(room) = fits.iter().copied().max().filter(|&r| r > 0) else {
                return;
            };
            // Items are sorted by cost, which grows with the length: by length too.
            let from = self.items.partition_point(|i| i.len > room);
            let Some(&i) = self.left.range(from..).next() else {
                return;
            };
            let item = self.items[i];
            let open = (0..step.len()).filter(|&b| fits[b] >= item.len);
            let Some(b) = open.min_by(|&x, &y| step[x].cost.total_cmp(&step[y].cost)) else {
                return; // Not reached: `room` fits it.
            };
            step[b].push(item);
            cap.get_or_insert(item.cost + (t - item.len) as f64);
            self.left.remove(&i);
        }
    }
}

/// The longest `n` with `n + w·n² ≤ x` (`usize::MAX` for no limit).
fn longest_within(x: f64, w: f64) -> usize {
    if x.is_infinite() {
        return usize::MAX;
    }
    if x < 0.0 {
        return 0;
    }
    let guess = match w > 0.0 {
        true => ((1.0 + 4.0 * w * x).sqrt() - 1.0) / (2.0 * w),
        false => x,
    };
    let mut n = guess.max(0.0).min(u32::MAX as f64) as usize;
    while n > 0 && cost(n, w) > x {
        n -= 1;
    }
    while cost(n + 1, w) <= x && n < u32::MAX as usize {
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests;
