//! The model of [`Filler::fill`]: the pass over every batch of the step per item placed
//! that it was before the batches were kept by cost (issue 40).

use super::{Bin, Filler};
use crate::loader::config::cost;

impl Filler<'_> {
    /// [`Filler::fill`] as it was: a pass over the step's batches for the one an item goes
    /// to. What each batch fits is kept (`fits`), and counted again only for the batch an
    /// item went to (for all of them when the cap is set).
    pub(super) fn fill_by_pass(&mut self, step: &mut [Bin], t: usize, w: f64) {
        let fits = &mut Vec::new();
        // A seeded step's cap: its costliest seed's.
        let seeds = step.iter().filter(|b| !b.oversize && !b.items.is_empty());
        let mut cap = seeds
            .map(|b| b.cost + (t - b.tokens) as f64)
            .reduce(f64::max);
        let count_all = |fits: &mut Vec<usize>, step: &[Bin], cap: Option<f64>| {
            fits.clear();
            fits.extend(
                step.iter()
                    .map(|b| fit_of(b, cap.unwrap_or(f64::INFINITY), t, w)),
            );
            fits.iter().copied().max().unwrap_or(0)
        };
        // The longest item any batch fits.
        let mut room = count_all(fits, step, cap);
        while !self.left.is_empty() && room > 0 {
            let from = self.first_within(room);
            let Some(i) = self.left.next_from(from) else {
                return;
            };
            let item = self.items[i];
            let Some((b, others)) = least_cost_fitting(step, fits, item.len) else {
                return; // Not reached: `room` fits it.
            };
            step[b].push(item);
            self.left.remove(i);
            match cap {
                Some(cap) => {
                    fits[b] = fit_of(&step[b], cap, t, w);
                    room = others.max(fits[b]);
                }
                None => {
                    cap = Some(item.cost + (t - item.len) as f64);
                    room = count_all(fits, step, cap);
                }
            }
        }
    }
}

/// The batch of least cost (the first such) that fits an item of `len` tokens, and the
/// longest item the other batches fit: one pass over the batches, once per item placed.
fn least_cost_fitting(step: &[Bin], fits: &[usize], len: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, f64)> = None;
    // The longest fit (and its batch) and the second longest.
    let (mut first, mut first_at, mut second) = (0, usize::MAX, 0);
    for (b, (bin, &fit)) in step.iter().zip(fits).enumerate() {
        if fit > first {
            (second, first, first_at) = (first, fit, b);
        } else {
            second = second.max(fit);
        }
        // Costs are never NaN: `<` orders them as `total_cmp` does, ties to the first.
        if fit >= len && best.is_none_or(|(_, least)| bin.cost < least) {
            best = Some((b, bin.cost));
        }
    }
    best.map(|(b, _)| (b, if b == first_at { second } else { first }))
}

/// The longest item batch `b` fits under the step's cap `cap` (infinite when not set yet).
fn fit_of(b: &Bin, cap: f64, t: usize, w: f64) -> usize {
    match (b.oversize, b.items.is_empty()) {
        (true, _) => 0,
        // An empty batch takes any item: a rank never gets an empty batch while items are
        // left (with a tiny budget, `w > 0` can put the cap under any item's cost).
        (false, true) => t,
        (false, false) => longest_within(cap - b.cost, w, t - b.tokens),
    }
}

/// The longest `n ≤ most` with `n + w·n² ≤ x` (`most` for no limit; 2³² - 1 at most
/// else), looked for from the root of `n + w·n² = x`, a square root and a division.
pub(in crate::loader::plan::balanced) fn longest_within(x: f64, w: f64, most: usize) -> usize {
    if x.is_infinite() {
        return most;
    }
    if x < 0.0 {
        return 0;
    }
    let most = most.min(u32::MAX as usize);
    let root = match w == 0.0 {
        // `n ≤ x`: the whole part of `x`.
        true => x.min(u32::MAX as f64) as usize,
        false => {
            let root = ((1.0 + 4.0 * w * x).sqrt() - 1.0) / (2.0 * w);
            root.max(0.0).min(u32::MAX as f64) as usize
        }
    };
    let mut n = root.min(most);
    while n > 0 && cost(n, w) > x {
        n -= 1;
    }
    while n < most && cost(n + 1, w) <= x {
        n += 1;
    }
    n
}
