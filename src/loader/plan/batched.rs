//! An epoch's batches before they are a [`Plan`]: the samples kept in the integers of the
//! epoch's order (`u32` when they fit), so that the whole epoch's batches, which ranks
//! dealing batches (`drop_last`) make before keeping theirs, take no more memory than the
//! order.

use super::{BatchInfo, Costs, Plan};
use crate::loader::config::{BatchSize, PlanConfig};
use crate::loader::order::Slot;

/// Batches of samples kept as `T`.
pub(super) struct Batched<T> {
    samples: Vec<T>,
    infos: Vec<BatchInfo>,
    /// Each batch's cost.
    costs: Vec<f64>,
    dropped: usize,
}

impl<T: Slot> Batched<T> {
    /// The batches of `order` (the whole epoch's, or one rank's part of it), samples of
    /// lengths `lengths`.
    pub(super) fn of_order<L: Slot, S: Slot>(
        config: &PlanConfig,
        (lengths, costs): (&[L], &Costs<'_>),
        order: &[S],
    ) -> Batched<T> {
        let buckets = config.buckets.len() + 1;
        let mut pending: Vec<Vec<usize>> = vec![Vec::new(); buckets];
        let mut pending_tokens = vec![0usize; buckets];
        let mut out = Batched {
            samples: Vec::with_capacity(order.len()),
            infos: Vec::new(),
            costs: Vec::new(),
            dropped: 0,
        };
        for s in order.iter().map(|s| s.get()) {
            let len = lengths[s].get();
            let b = config.buckets.partition_point(|&bound| bound < len);
            match config.batch {
                BatchSize::Samples(size) => {
                    pending[b].push(s);
                    if pending[b].len() == size {
                        out.close(&mut pending[b], (lengths, costs), false);
                    }
                }
                BatchSize::Tokens(budget) => {
                    if len > budget {
                        // The batch being filled comes first: the epoch keeps its order,
                        // and in file order both stay views.
                        if !pending[b].is_empty() {
                            out.close(&mut pending[b], (lengths, costs), false);
                            pending_tokens[b] = 0;
                        }
                        out.close(&mut vec![s], (lengths, costs), true);
                        continue;
                    }
                    if pending_tokens[b] + len > budget {
                        out.close(&mut pending[b], (lengths, costs), false);
                        pending_tokens[b] = 0;
                    }
                    pending[b].push(s);
                    pending_tokens[b] += len;
                }
            }
        }
        for p in &mut pending {
            if p.is_empty() {
                continue;
            }
            if config.drop_last {
                out.dropped += p.len();
            } else {
                out.close(p, (lengths, costs), false);
            }
        }
        out
    }

    /// Appends `samples` as one batch and empties it.
    fn close<L: Slot>(
        &mut self,
        samples: &mut Vec<usize>,
        (lengths, costs): (&[L], &Costs<'_>),
        oversize: bool,
    ) {
        let start = self.samples.len();
        let (mut tokens, mut max_len, mut cost) = (0, 0, 0.0);
        for &s in samples.iter() {
            tokens += lengths[s].get();
            max_len = max_len.max(lengths[s].get());
            cost += costs.of(s, lengths[s].get());
        }
        self.costs.push(cost);
        self.samples.extend(samples.drain(..).map(T::of));
        self.infos.push(BatchInfo {
            start,
            end: self.samples.len(),
            tokens,
            max_len,
            oversize,
        });
    }

    /// The plan of `epoch` of these batches (no copy when `T` is `usize`).
    pub(super) fn into_plan(self, epoch: u64) -> Plan {
        Plan {
            epoch,
            samples: self.samples.into_iter().map(T::get).collect(),
            infos: self.infos,
            costs: self.costs,
            dropped: self.dropped,
            windows: None,
            parts: Default::default(),
        }
    }

    /// Rank `rank`'s share of the whole epoch's batches: `len / world` consecutive ones,
    /// once `len % world` are left out so that every rank gets as many (the last batches
    /// that are not oversize; oversize ones only when there are too few others). The last
    /// rank counts every sample of the epoch no rank reads as dropped.
    pub(super) fn deal(self, rank: usize, world: usize, epoch: u64) -> Plan {
        let len = self.infos.len();
        let regular = (0..len).rev().filter(|&b| !self.infos[b].oversize);
        let oversize = (0..len).rev().filter(|&b| self.infos[b].oversize);
        let mut left_out = vec![false; len];
        for b in regular.chain(oversize).take(len % world) {
            left_out[b] = true;
        }
        let kept: Vec<usize> = (0..len).filter(|&b| !left_out[b]).collect();
        let share = kept.len() / world;
        let mut plan = Plan {
            epoch,
            samples: Vec::new(),
            infos: Vec::with_capacity(share),
            costs: Vec::with_capacity(share),
            dropped: 0,
            windows: None,
            parts: Default::default(),
        };
        for &b in &kept[share * rank..share * (rank + 1)] {
            let info = self.infos[b];
            let start = plan.samples.len();
            let samples = self.samples[info.start..info.end].iter();
            plan.samples.extend(samples.map(|&s| s.get()));
            let end = plan.samples.len();
            plan.infos.push(BatchInfo { start, end, ..info });
            plan.costs.push(self.costs[b]);
        }
        if rank + 1 == world {
            let unread: usize = (0..len)
                .filter(|&b| left_out[b])
                .map(|b| self.infos[b].len())
                .sum();
            plan.dropped = self.dropped + unread;
        }
        plan
    }
}
