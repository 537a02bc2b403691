//! A packed mixture's pack lengths over its stream (`docs/design.md`, "Mixing"). From a
//! place on (a resume under another pack length), every window drawn before it is kept and
//! each source goes on from where its stream stands: the tokens of its current epoch that
//! no window drawn from it holds are packed again at the new length (in the order packing
//! took them, as a loader over one dataset packs what a part left), then its later epochs
//! at that length. The mixture's epoch holding the place keeps the share of it that was
//! left there: its places left at the old length times an epoch's places at the new length
//! over those at the old, rounded up; later epochs are the sources' first epochs' windows
//! at the new length.

use std::ops::Range;
use std::sync::Arc;

use super::{Blend, SourceEpoch};
use crate::error::{ArgumentError, Result};
use crate::loader::config::PlanConfig;
use crate::loader::pack::{PackMode, Packing, Windows, window_order};
use crate::loader::schedule::Schedules;

/// The packings of a packed mixture's stream, each from its first place on: none, the
/// options' packing throughout.
#[derive(Clone, Debug, Default)]
pub(crate) struct Packs {
    regimes: Vec<Regime>,
}

/// One packing from place `start` of the stream on.
#[derive(Clone, Debug)]
struct Regime {
    start: u128,
    packing: Packing,
    /// The mixture's epoch holding `start`, and its places (its end as this packing set it).
    epoch: u64,
    places: Range<u128>,
    /// The places of a whole epoch at this packing: the sources' first epochs' windows.
    len: u128,
    /// Where each source's stream stands at `start`.
    sources: Vec<Anchor>,
}

/// Where a source's stream stands at a packing's first place: its draws before it, the
/// epoch of its next draw, and what that epoch has left packed again (`None`: nothing of it
/// was drawn, the whole epoch is packed at the new packing); `per_epoch`, its samples in
/// each epoch when every epoch has as many (rows, or concatenate and split).
#[derive(Clone, Debug)]
struct Anchor {
    drawn: u128,
    epoch: u128,
    rest: Option<Arc<SourceEpoch>>,
    per_epoch: Option<usize>,
}

/// The tokens of a stretch of a source's draws: of one epoch, under one packing.
#[derive(Default)]
pub(super) struct Stretch {
    draws: Range<u128>,
    tokens: Vec<u32>,
    /// The regime of the stretch (`None`: the options' packing throughout), the epoch
    /// after it and that epoch's first draw.
    next: Option<(Option<usize>, u128, u128)>,
}

/// `config` packing by `packing`.
fn packing_by(config: &PlanConfig, packing: Packing) -> PlanConfig {
    PlanConfig {
        packing: Some(packing),
        ..config.clone()
    }
}

/// Whether every epoch of a source has as many samples under `config`.
fn constant(config: &PlanConfig) -> bool {
    (config.packing).is_none_or(|p| matches!(p.mode(), PackMode::Split { .. }))
}

impl Blend {
    /// This blend packing its stream by `packs` (first place, packing; the first at 0,
    /// places increasing), the weights' switches already its own.
    pub(crate) fn with_packs(
        mut self,
        packs: &[(u128, Packing)],
        input: (&PlanConfig, &[u32]),
    ) -> Blend {
        self.packs = self.regimes(packs, input, true);
        self
    }

    /// The regimes of `packs`, with where each source stands at each (`anchors`) or
    /// without (enough for the epochs' places); none for the options' packing throughout.
    fn regimes(
        &self,
        packs: &[(u128, Packing)],
        input: (&PlanConfig, &[u32]),
        anchors: bool,
    ) -> Packs {
        if let [(0, packing)] = packs
            && Some(*packing) == input.0.packing
        {
            return Packs::default();
        }
        // Each regime found on the blend packing as those before it do: the weights'
        // switches before its start count the tokens drawn at their packings.
        let mut blend = self.with_rules(self.rules.clone(), self.taken);
        for &(start, packing) in packs {
            let before = blend.packs.regimes.last();
            let regime = blend.regime((before, anchors), (start, packing), input);
            blend.packs.regimes.push(regime);
        }
        blend.packs
    }

    /// The packings of the stream (first place, packing), which its weights' switches
    /// depend on.
    pub(super) fn packs_key(&self) -> Vec<(u128, Packing)> {
        (self.packs.regimes.iter())
            .map(|r| (r.start, r.packing))
            .collect()
    }

    /// The packing in force at place `at` of epoch `epoch` of the stream packed by `packs`
    /// before the epoch and anew at `made` within it.
    pub(crate) fn packing_by(
        &self,
        packs: &[(u128, Packing)],
        epoch: u64,
        made_at: (&[(usize, Packing)], usize),
        input: (&PlanConfig, &[u32]),
    ) -> Option<Packing> {
        let mut blend = self.with_rules(self.rules.clone(), self.taken);
        blend.packs = self.regimes(packs, input, false);
        blend.packing_in(epoch, made_at, input.0.packing)
    }

    /// Whether every source has a window in its first epoch at `packing`.
    pub(crate) fn has_windows(
        &self,
        packing: Packing,
        (config, lengths): (&PlanConfig, &[u32]),
    ) -> bool {
        let config = packing_by(config, packing);
        (0..self.parts.len()).all(|k| self.source_epoch(&config, lengths, k, 0).len() > 0)
    }

    /// The regime of `packing` from place `start`, `before` the one in force there.
    fn regime(
        &self,
        (before, anchors): (Option<&Regime>, bool),
        (start, packing): (u128, Packing),
        (options, lengths): (&PlanConfig, &[u32]),
    ) -> Regime {
        let config = packing_by(options, packing);
        let firsts: Vec<usize> = (0..self.parts.len())
            .map(|k| self.source_epoch(&config, lengths, k, 0).len())
            .collect();
        let len = firsts.iter().map(|&n| n as u128).sum::<u128>();
        let per_epoch = |k: usize| constant(&config).then_some(firsts[k]);
        let Some(prev) = before else {
            let sources = (0..self.parts.len())
                .map(|k| Anchor {
                    drawn: 0,
                    epoch: 0,
                    rest: None,
                    per_epoch: per_epoch(k),
                })
                .collect();
            return Regime {
                start: 0,
                packing,
                epoch: 0,
                places: 0..len,
                len,
                sources,
            };
        };
        // The epoch holding `start`, where it starts and where it ended before.
        let (epoch, first, end) = match start < prev.places.end {
            true => (prev.epoch, prev.places.start, prev.places.end),
            false => {
                let m = (start - prev.places.end) / prev.len;
                let first = prev.places.end + m * prev.len;
                (prev.epoch + 1 + m as u64, first, first + prev.len)
            }
        };
        let end = start + ((end - start) * len).div_ceil(prev.len);
        let sources = match anchors {
            false => Vec::new(),
            true => {
                let switches = self.rules.switches(self, (options, lengths), start + 1);
                let drawn = self.drawn_before(&switches, start);
                let before_config = packing_by(&config, prev.packing);
                (0..self.parts.len())
                    .map(|k| {
                        let at = (&prev.sources[k], drawn[k]);
                        let anchor = self.anchor((&before_config, &config), lengths, k, at);
                        Anchor {
                            per_epoch: per_epoch(k),
                            ..anchor
                        }
                    })
                    .collect()
            }
        };
        Regime {
            start,
            packing,
            epoch,
            places: first..end,
            len,
            sources,
        }
    }

    /// Where source `k`'s stream stands at its draw `drawn` under `config` (packing anew),
    /// its stream before drawn under `before` from `anchor`.
    fn anchor(
        &self,
        (before, config): (&PlanConfig, &PlanConfig),
        lengths: &[u32],
        k: usize,
        (anchor, drawn): (&Anchor, u128),
    ) -> Anchor {
        let mut found = None;
        let own = &lengths[self.rows.part_rows(k)];
        let packing = config.packing.expect("a packing");
        self.regime_walk((before, lengths), k, anchor, (drawn, drawn + 1), |at| {
            let (epoch, samples, part, rest) = at;
            let rest = match (samples, part.start == 0 && !rest) {
                (SourceEpoch::Windows(windows, order), false) => {
                    let mut read = vec![false; windows.len()];
                    order[..part.start].iter().for_each(|&w| read[w] = true);
                    let windows = Windows::of_docs(&packing, windows.unread(own, |w| read[w]));
                    let source = self.source_config(config, k);
                    let order = window_order(&source, windows.len(), epoch as u64);
                    Some(Arc::new(SourceEpoch::Windows(windows, order)))
                }
                _ => None,
            };
            found = Some(Anchor {
                drawn,
                epoch,
                rest,
                per_epoch: None,
            });
        });
        found.expect("a source's every epoch has a sample")
    }

    /// Walks `from..to` of source `k`'s stream, its draws from `anchor`'s on packed by
    /// `config`: `take((epoch, samples, part, rest))` for the part of each epoch's samples
    /// in it (`rest`: what a packed epoch had left, packed again).
    fn regime_walk(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        k: usize,
        anchor: &Anchor,
        (from, to): (u128, u128),
        mut take: impl FnMut((u128, &SourceEpoch, Range<usize>, bool)),
    ) {
        let (mut epoch, mut start) = (anchor.epoch, anchor.drawn);
        if let Some(rest) = &anchor.rest {
            let end = start + rest.len() as u128;
            let (a, b) = (from.max(start), to.min(end));
            if a < b {
                take((
                    epoch,
                    rest,
                    (a - start) as usize..(b - start) as usize,
                    true,
                ));
            }
            (epoch, start) = (epoch + 1, end);
        }
        if let Some(n) = anchor.per_epoch.filter(|_| from > start) {
            let skip = (from - start) / n as u128;
            (epoch, start) = (epoch + skip, start + skip * n as u128);
        }
        while start < to {
            // A source's epochs count modulo 2^64 (past them, its orders repeat).
            let samples = self.source_epoch(config, lengths, k, epoch as u64);
            let end = start + samples.len() as u128;
            let (a, b) = (from.max(start), to.min(end));
            if a < b {
                take((
                    epoch,
                    &samples,
                    (a - start) as usize..(b - start) as usize,
                    false,
                ));
            }
            (epoch, start) = (epoch + 1, end);
        }
    }

    /// Walks `from..to` of source `k`'s stream epoch by epoch, under each packing from the
    /// place it took over: `take(samples, part)` for the part of each epoch's samples in
    /// it (`samples`: the epoch's, or what it had left packed again; `part`: indices into
    /// them).
    pub(super) fn source_walk(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        k: usize,
        (from, to): (u128, u128),
        mut take: impl FnMut(&SourceEpoch, Range<usize>),
    ) {
        let regimes = &self.packs.regimes;
        if regimes.is_empty() {
            let anchor = self.first_anchor(config, k);
            let take = |(_, s, part, _): (u128, &SourceEpoch, Range<usize>, bool)| take(s, part);
            return self.regime_walk((config, lengths), k, &anchor, (from, to), take);
        }
        for (i, r) in regimes.iter().enumerate() {
            let next = regimes.get(i + 1).map_or(u128::MAX, |n| n.sources[k].drawn);
            let (a, b) = (from.max(r.sources[k].drawn), to.min(next));
            if a < b {
                let config = packing_by(config, r.packing);
                let take =
                    |(_, s, part, _): (u128, &SourceEpoch, Range<usize>, bool)| take(s, part);
                self.regime_walk((&config, lengths), k, &r.sources[k], (a, b), take);
            }
        }
    }

    /// Where source `k`'s stream starts, packed by `config` throughout.
    fn first_anchor(&self, config: &PlanConfig, k: usize) -> Anchor {
        Anchor {
            drawn: 0,
            epoch: 0,
            rest: None,
            per_epoch: constant(config).then_some(self.firsts[k]),
        }
    }

    /// The tokens of draw `j` of source `k`'s stream (its sample's length, or its window's
    /// tokens at the packing in force there), `stretch` holding those of the stretch
    /// around it: draws walked in order find each epoch once.
    pub(super) fn draw_tokens(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        k: usize,
        j: u128,
        stretch: &mut Stretch,
    ) -> usize {
        if !stretch.draws.contains(&j) {
            let regimes = &self.packs.regimes;
            let r = regimes
                .partition_point(|r| r.sources[k].drawn <= j)
                .checked_sub(1);
            let (config, anchor, end) = match r {
                None => (config.clone(), self.first_anchor(config, k), u128::MAX),
                Some(i) => {
                    let next = regimes.get(i + 1).map_or(u128::MAX, |n| n.sources[k].drawn);
                    let config = packing_by(config, regimes[i].packing);
                    (config, regimes[i].sources[k].clone(), next)
                }
            };
            // From the epoch after the stretch held, when `j` is past it under one packing.
            let anchor = match stretch.next {
                Some((at, epoch, drawn)) if at == r && drawn <= j && drawn >= anchor.drawn => {
                    Anchor {
                        drawn,
                        epoch,
                        rest: None,
                        ..anchor
                    }
                }
                _ => anchor,
            };
            let first_row = self.rows.part_rows(k).start;
            self.regime_walk((&config, lengths), k, &anchor, (j, j + 1), |at| {
                let (epoch, samples, part, _) = at;
                let first = j - part.start as u128;
                let last = (samples.len() as u128).min(end - first) as usize;
                stretch.tokens = (part.start..last)
                    .map(|i| samples.tokens_of(i, lengths, first_row) as u32)
                    .collect();
                stretch.draws = j..first + last as u128;
                stretch.next = Some((r, epoch + 1, first + samples.len() as u128));
            });
        }
        stretch.tokens[(j - stretch.draws.start) as usize] as usize
    }

    /// The places of the mixture's epoch `epoch` in its stream.
    pub(crate) fn epoch_places(&self, epoch: u64) -> Range<u128> {
        let Some(r) = self.packs.regimes.iter().rev().find(|r| r.epoch <= epoch) else {
            let n: u128 = self.firsts.iter().map(|&c| c as u128).sum();
            return u128::from(epoch) * n..(u128::from(epoch) + 1) * n;
        };
        if r.epoch == epoch {
            return r.places.clone();
        }
        let start = r.places.end + u128::from(epoch - r.epoch - 1) * r.len;
        start..start + r.len
    }

    /// The length of the windows drawn at `places` (`packing`: the options', without
    /// packings of the stream): (first place among them, window length) where each starts.
    pub(super) fn window_lens(
        &self,
        places: &Range<u128>,
        packing: &Packing,
    ) -> Vec<(usize, usize)> {
        let regimes = &self.packs.regimes;
        let at = regimes.partition_point(|r| r.start <= places.start);
        let first = at
            .checked_sub(1)
            .map_or(packing.window_len(), |i| regimes[i].packing.window_len());
        let mut lens = vec![(0, first)];
        for r in regimes[at..].iter().take_while(|r| r.start < places.end) {
            let len = r.packing.window_len();
            if lens.last().is_some_and(|&(_, l)| l != len) {
                lens.push(((r.start - places.start) as usize, len));
            }
        }
        lens
    }

    /// The packings of the stream before epoch `epoch`, as a state carries them: from
    /// place 0 (`packing`, the options', when the stream has none).
    pub(super) fn packs_before(
        &self,
        epoch: u64,
        packing: Option<Packing>,
    ) -> Vec<(u128, Packing)> {
        match self.packs.regimes.is_empty() {
            true => packing.map(|p| (0, p)).into_iter().collect(),
            false => (self.packs.regimes.iter())
                .filter(|r| r.start == 0 || r.epoch < epoch)
                .map(|r| (r.start, r.packing))
                .collect(),
        }
    }

    /// This blend packing as its stream did before epoch `epoch` (the packings taken over
    /// within it and after left out).
    pub(crate) fn before_epoch(&self, epoch: u64) -> Blend {
        let mut blend = self.with_rules(self.rules.clone(), self.taken);
        let regimes = (self.packs.regimes.iter()).filter(|r| r.start == 0 || r.epoch < epoch);
        blend.packs = Packs {
            regimes: regimes.cloned().collect(),
        };
        blend
    }

    /// The packings of epoch `epoch`'s stream: those before it (`packing`, the options',
    /// when it has none), then `made` within it (places of the epoch, packings).
    fn packs_with(
        &self,
        epoch: u64,
        made: &[(usize, Packing)],
        packing: Option<Packing>,
    ) -> Vec<(u128, Packing)> {
        let first = self.epoch_places(epoch).start;
        let mut packs = self.packs_before(epoch, packing);
        for &(place, p) in made {
            let start = first + place as u128;
            packs.retain(|&(s, _)| s < start);
            packs.push((start, p));
        }
        packs
    }

    /// The packing in force at place `at` of epoch `epoch`, packed anew at `made` within
    /// it ([`Blend::packs_with`]).
    pub(crate) fn packing_in(
        &self,
        epoch: u64,
        (made, at): (&[(usize, Packing)], usize),
        packing: Option<Packing>,
    ) -> Option<Packing> {
        let at = self.epoch_places(epoch).start + at as u128;
        let packs = self.packs_with(epoch, made, packing);
        packs.iter().rev().find(|(s, _)| *s <= at).map(|&(_, p)| p)
    }

    /// The windows of epoch `epoch`, the stream packed anew at `made` within it.
    pub(crate) fn remixed(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        epoch: u64,
        made: &[(usize, Packing)],
    ) -> Arc<Windows> {
        let blend = self.with_repacks(epoch, made, (config, lengths));
        match blend.epoch(config, lengths, epoch) {
            super::Epoch::Windows(windows) => windows,
            _ => unreachable!("a packed mixture's epoch is of windows"),
        }
    }

    /// The packing in force where epoch `epoch` starts, when the stream has packings.
    pub(crate) fn packing_at(&self, epoch: u64) -> Option<Packing> {
        let first = self.epoch_places(epoch).start;
        let regimes = self.packs.regimes.iter().rev();
        regimes
            .filter(|r| r.start <= first)
            .map(|r| r.packing)
            .next()
    }

    /// This blend (its packings those before epoch `epoch`) packing anew at `repacks`
    /// (places of the epoch, packings) too.
    pub(crate) fn with_repacks(
        &self,
        epoch: u64,
        repacks: &[(usize, Packing)],
        input: (&PlanConfig, &[u32]),
    ) -> Blend {
        if repacks.is_empty() {
            return self.before_epoch(epoch + 1);
        }
        let packs = self.packs_with(epoch, repacks, input.0.packing);
        let blend = self.with_rules(self.rules.clone(), self.taken);
        blend.with_packs(&packs, input)
    }

    /// Checks that every source has a window at every pack length of `schedules`.
    ///
    /// # Errors
    /// [`ArgumentError::LoaderConfig`] (option `pack`) naming the source and the length.
    pub(crate) fn windows_at(
        &self,
        config: &PlanConfig,
        schedules: &Schedules,
        lengths: &[u32],
    ) -> Result<()> {
        let (Some(pack), Some(packing)) = (&schedules.pack, config.packing) else {
            return Ok(());
        };
        for &(_, len) in pack.points() {
            let config = packing_by(config, packing.of_len(len));
            let firsts =
                (0..self.parts.len()).map(|k| self.source_epoch(&config, lengths, k, 0).len());
            if let Some(k) = firsts.into_iter().position(|n| n == 0) {
                return Err(ArgumentError::LoaderConfig {
                    option: "pack",
                    reason: format!("source {k} has no window at pack length {len}"),
                }
                .into());
            }
        }
        Ok(())
    }
}
