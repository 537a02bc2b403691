//! The open batches of a step being filled by [`Filler::fill`](super::Filler::fill), in
//! the order of their costs, for the cheapest that fits an item.

use super::{Bin, Item};

/// The step's batches not over the budget by cost, ties by number, in a ring: the batch an
/// item goes to leaves its place and comes back in from the costliest end. An item goes
/// to the batch of least cost that fits it; a batch that fits it has the tokens for it and
/// costs at most the cap less the item's cost, so the first in this order with the tokens
/// is the one when any is (those after it cost as much or more). Most items go to the
/// cheapest batch, the first; LPT with items largest first puts it back among the last.
#[derive(Default)]
pub(in crate::loader::plan::balanced) struct Cheapest {
    /// The batches' numbers, the first (cheapest) at `head`, in a power of two.
    ring: Vec<usize>,
    head: usize,
    len: usize,
}

impl Cheapest {
    /// The batches of `step` not over the budget.
    pub(super) fn start(&mut self, step: &[Bin]) {
        let size = step.len().next_power_of_two();
        self.ring.clear();
        self.ring.resize(size, 0);
        (self.head, self.len) = (0, 0);
        for (b, bin) in step.iter().enumerate() {
            if !bin.oversize {
                self.insert(step, b);
            }
        }
    }

    /// The batch at `k` in the order.
    fn at(&self, k: usize) -> usize {
        self.ring[(self.head + k) & (self.ring.len() - 1)]
    }

    fn set(&mut self, k: usize, b: usize) {
        let mask = self.ring.len() - 1;
        self.ring[(self.head + k) & mask] = b;
    }

    /// Batch `b` (not in the order) put in at its place, looked for from the costliest.
    fn insert(&mut self, step: &[Bin], b: usize) {
        let mut k = self.len;
        while k > 0 {
            let a = self.at(k - 1);
            if before(step, a, b) {
                break;
            }
            self.set(k, a);
            k -= 1;
        }
        self.set(k, b);
        self.len += 1;
    }

    /// The batch at `k` in the order taken out of it.
    fn take(&mut self, k: usize) -> usize {
        let b = self.at(k);
        for j in (0..k).rev() {
            let a = self.at(j);
            self.set(j + 1, a);
        }
        self.head = (self.head + 1) & (self.ring.len() - 1);
        self.len -= 1;
        b
    }

    /// The place in the order of the batch of least cost (the first such) that fits an
    /// item of `len` tokens (`0 < len ≤ t`) and cost `c(len) = len + w·len²` under the
    /// step's cap `cap`, else at least the longest item any batch fits (under `len`): an
    /// empty batch takes any item (a rank never gets an empty batch while items are left);
    /// another needs `len` tokens left and `c(len) ≤ cap - cost` (the fit the model counts,
    /// for a length in 32 bits). Inlined in the fill, once a sample.
    #[inline]
    pub(super) fn cheapest_fitting(
        &self,
        step: &[Bin],
        (len, within): (usize, f64),
        (cap, t): (f64, usize),
    ) -> Result<usize, usize> {
        // The most tokens left in a batch, when none has `len`.
        let mut most = 0;
        for k in 0..self.len {
            let bin = &step[self.at(k)];
            if bin.items.is_empty() {
                return Ok(k);
            }
            if bin.tokens + len > t {
                most = most.max(t - bin.tokens);
                continue;
            }
            if within <= cap - bin.cost && u32::try_from(len).is_ok() {
                return Ok(k);
            }
            // No batch after it fits the item for its cost, but an empty one as cheap.
            let mut cheap = (k + 1..self.len).take_while(|&j| step[self.at(j)].cost <= 0.0);
            return cheap
                .find(|&j| step[self.at(j)].items.is_empty())
                .ok_or(len - 1);
        }
        Err(most)
    }

    /// `item` put in the batch at `k` in the order, which goes to its new place. Inlined
    /// in the fill, once a sample.
    #[inline]
    pub(super) fn push(&mut self, step: &mut [Bin], k: usize, item: Item) {
        let b = self.take(k);
        step[b].push(item);
        self.insert(step, b);
    }

    /// `item`, of 0 tokens, put in the batch of least cost (the first such) of all, when a
    /// batch fits an item of 1: it fits every batch, one over the budget too, which is not
    /// in the order (and may cost less than one within it when costs are not `n + w·n²` of
    /// the length, as a packed window's, its padding counted).
    pub(super) fn push_empty(&mut self, step: &mut [Bin], item: Item) {
        let over = (0..step.len()).filter(|&b| step[b].oversize);
        match over.reduce(|a, b| if before(step, b, a) { b } else { a }) {
            Some(b) if before(step, b, self.at(0)) => step[b].push(item),
            _ => self.push(step, 0, item),
        }
    }
}

/// Whether batch `a` comes before batch `b` in the order of their costs, ties by number.
/// Costs are never NaN: `<` orders them as `total_cmp` does.
fn before(step: &[Bin], a: usize, b: usize) -> bool {
    step[a].cost < step[b].cost || (step[a].cost == step[b].cost && a < b)
}
