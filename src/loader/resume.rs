//! A loader's state, and going on from one saved under other options
//! ([`Loader::restore`]): the epoch's parts replayed, the rest planned over what they left.

use std::sync::Arc;

use super::config::{PlanConfig, Ranks, lengths_hash};
use super::mix::{Blend, Change, Stream, Taken};
use super::parts;
use super::position::LENGTHS_DIFFER;
use super::state::LoaderState;
use super::{Loader, Plan, Position};
use crate::error::{ArgumentError, Result};

/// An epoch resumed from a state saved under other options: the parts read then, and a
/// mixture's stream (with the change of weights this loader made, if it made one).
#[derive(Clone, Debug)]
pub(super) struct Resumed {
    pub epoch: u64,
    pub read: Vec<(PlanConfig, usize)>,
    pub mixture: Option<Stream>,
}

/// The state of a loader whose next batch is `position` of `plan`.
pub(super) fn state_at(plan: &Plan, position: Position) -> LoaderState {
    let turns = (plan.parts.starts.iter()).all(|(_, c)| matches!(c.ranks, Ranks::Turns { .. }));
    let read = match plan.epoch() == position.epoch && turns {
        true => plan.parts.read_before(position.batch),
        false => Vec::new(),
    };
    let mixture = plan.parts.mixture.clone();
    LoaderState::new(position, read, plan.parts.tokens_before, mixture)
}

impl Loader {
    /// The loader's state: [`Loader::next_position`], and what a loader built with other
    /// options needs to go on from it ([`Loader::restore`]).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).build()?;
    /// loader.next_batch()?;
    /// assert_eq!(loader.state().position().batch, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> LoaderState {
        let position = self.next_position();
        match &self.plan {
            Some(plan) if plan.epoch() == position.epoch => state_at(plan, position),
            _ => {
                let tokens = self.tokens_before(position.epoch);
                let mixture = self.own_stream(position.epoch);
                LoaderState::new(position, Vec::new(), tokens, mixture)
            }
        }
    }

    /// Continues from `state`. Saved by a loader that makes the same plans, this is
    /// [`Loader::seek`]. Saved by one with other options, both with ranks taking turns
    /// ([`elastic_shard`](super::LoaderBuilder::elastic_shard), balance or a schedule),
    /// it goes on under this loader's options with what the epoch has left: the samples
    /// no batch read before the state (packed: the tokens no window read), each once,
    /// planned again — another batch size or token budget, pack length, balance, world
    /// size or workers. The data, the shuffle and its seed, and whether batches are packed
    /// must be the same.
    ///
    /// A [`Mixture`](super::Mixture)'s state counts the places of its draws (a source that
    /// repeats within the epoch holds a row at several), and goes on under other weights
    /// too: the samples up to the last one a batch before the state read keep their
    /// draws, the rest of the stream is drawn by this loader's weights, the rule starting
    /// afresh there and each source's stream going on where it was (`docs/design.md`,
    /// "Mixing"). The loader then draws its later epochs by that stream, and its
    /// [`Loader::fingerprint`] says so. A packed mixture goes on at another pack length or
    /// mode too: the windows read before the state are kept, and each source's tokens that
    /// no window drawn from it holds are packed again at this loader's.
    ///
    /// # Errors
    /// [`ArgumentError::PositionMismatch`] naming what differs when the change cannot keep
    /// every sample once (other data or record batches, another shuffle or seed, packing
    /// turned on or off, a mixture's other sources or seed, ranks sharded by parts on either
    /// side); [`ArgumentError::BatchOutOfRange`] when the
    /// state's batches are not in its plans.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let mut two_ranks = Loader::builder(&file).with_batch_size(1).elastic_shard(0, 2).build()?;
    /// two_ranks.next_batch()?;                                   // step 0: samples 0 and 1
    /// let state = two_ranks.state();
    /// let mut one = Loader::builder(&file).with_token_budget(7).elastic_shard(0, 1).build()?;
    /// one.restore(&state)?;
    /// assert_eq!(one.next_batch()?.expect("the rest").samples(), &[2, 3]);
    /// assert_eq!(one.next_batch()?.expect("the rest").samples(), &[4]);
    ///
    /// // A mixture goes on under other weights: source 1's stream where it was.
    /// use lodtensor::loader::Mixture;
    /// # let (a, b) = (MappedDataset::open(&path)?, MappedDataset::open(&path)?);
    /// let even = Mixture::new(vec![(&a).into(), (&b).into()], vec![1.0, 1.0]);
    /// let mut first = Loader::builder(&even).with_batch_size(2).elastic_shard(0, 1).build()?;
    /// assert_eq!(first.next_batch()?.expect("a batch").sources(), Some(vec![0, 1]));
    /// let mostly_b = Mixture::new(vec![(&a).into(), (&b).into()], vec![1.0, 9.0]);
    /// let mut then = Loader::builder(&mostly_b).with_batch_size(3).elastic_shard(0, 1).build()?;
    /// then.restore(&first.state())?;
    /// let next = then.next_batch()?.expect("the rest");
    /// assert_eq!((next.sources(), next.source_rows()), (Some(vec![1, 1, 1]), Some(vec![1, 2, 3])));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore(&mut self, state: &LoaderState) -> Result<()> {
        // A state refused leaves the loader where it was.
        let before = (
            self.position,
            self.plan.clone(),
            self.resumed.clone(),
            self.tokens,
            self.blend.clone(),
            self.packs_through,
        );
        let restored = self.restore_from(state);
        if restored.is_err() {
            (
                self.position,
                self.plan,
                self.resumed,
                self.tokens,
                self.blend,
                self.packs_through,
            ) = before;
        }
        restored
    }

    /// [`Loader::restore`], leaving the loader changed when it fails.
    fn restore_from(&mut self, state: &LoaderState) -> Result<()> {
        let state = &self.packs_kept(state);
        let position = state.position();
        if let Some(t) = state.tokens_before {
            self.tokens = Some((position.epoch, t));
        }
        self.resumed = None;
        // A stream an earlier state gave (or packings of its own) is left for this
        // loader's own.
        if let Some(blend) =
            (self.blend.as_ref()).filter(|b| b.taken().is_some() || self.packs_through != (0, 0))
        {
            (self.blend, self.packs_through) = (Some(Arc::new(blend.own())), (0, 0));
        }
        let differs = self.mixture_differs(state);
        let (own, saved) = (self.fingerprint(), position.fingerprint);
        let same_data = self.same_data(saved.lengths)?;
        // The same options over the same samples (counted or measured): the same plan.
        let same =
            (own.options, own.record_batches) == (saved.options, saved.record_batches) && same_data;
        if same && differs.is_empty() && self.same_stream(state) && self.made_parts(state) {
            return self.go_to(position);
        }
        let refused = |differs: Vec<&str>| {
            Err(ArgumentError::PositionMismatch {
                differs: differs.join("; "),
            }
            .into())
        };
        if position.batch == 0 && state.read.is_empty() {
            // At an epoch's start nothing of it was read: any options go on from there.
            if !same_data {
                return refused(vec![LENGTHS_DIFFER]);
            }
            if !differs.is_empty() {
                return refused(differs);
            }
            self.position = (position.epoch, 0);
            self.take_over(state, 0);
            return Ok(());
        }
        let mut differs = [self.refused_change(state, same_data), differs].concat();
        differs.dedup();
        if !differs.is_empty() {
            return refused(differs);
        }
        self.resumed = Some(Resumed {
            epoch: position.epoch,
            read: state.read.clone(),
            mixture: state.mixture.clone(),
        });
        self.position = (position.epoch, position.batch);
        self.plan = None;
        let plan = self.current_plan();
        if plan.parts.own != position.batch {
            return Err(ArgumentError::BatchOutOfRange {
                epoch: position.epoch,
                batch: position.batch,
                batches: plan.parts.own,
            }
            .into());
        }
        self.take_over(state, plan.parts.read_end);
        Ok(())
    }

    /// Takes `state`'s mixture stream over when it is not this loader's own: its draws
    /// to place `read_end` of the epoch (one past the last any read batch holds), this
    /// loader's weights from there, the rule starting afresh and each source's stream going
    /// on where it was; packed before the epoch as the state's stream was (a part packing
    /// otherwise packs it anew where it starts: `remix.rs`). The weights in force there
    /// going on unchanged, the stream is taken over as it is. ([`Loader::mixture_differs`]
    /// refuses a schedule's here.)
    fn take_over(&mut self, state: &LoaderState, read_end: usize) {
        let (Some(blend), Some(saved)) = (self.blend.clone(), &state.mixture) else {
            return;
        };
        let epoch = state.position().epoch;
        let input = (&self.config, &self.inputs.lengths[..]);
        let parts = state.read.len();
        let current = saved.of_part(parts, &blend, input);
        let own = self.own_stream(epoch).expect("a mixture");
        let mut stream = saved.clone();
        if !(current.is(&own.switches) && saved.packs == own.packs) {
            let taken = blend.with_stream((&current, &saved.packs), input);
            let start = taken.epoch_places(epoch).start + read_end as u128;
            let change = |mut points: Vec<(u64, Vec<f64>)>| {
                let later = points.split_off(1);
                let (_, weights) = points.pop().expect("a first set");
                Change {
                    part: parts,
                    start,
                    weights,
                    later,
                }
            };
            match blend.one_set() {
                // One set going on unchanged: the stream as it is.
                Some(weights) => {
                    let given = &current.given;
                    let in_force = given.iter().rev().find(|g| g.start <= start);
                    let last = given.last().map_or(0, |g| g.start);
                    if !(in_force.is_some_and(|g| g.weights == weights)
                        && last <= start
                        && current.tails.is_empty())
                    {
                        stream.changes.push(change(vec![(0, weights.to_vec())]));
                    }
                }
                // A schedule taken up there, by the tokens drawn as packed.
                None => stream.changes.push(change(blend.own_points())),
            }
            let given = stream.of_part(parts, &blend, input);
            self.blend = Some(Arc::new(blend.with_stream((&given, &stream.packs), input)));
            self.packs_through = (epoch, state.tokens_before.unwrap_or(0));
        }
        self.resumed = Some(Resumed {
            epoch,
            read: state.read.clone(),
            mixture: Some(stream),
        });
        self.plan = None;
        self.current_plan();
    }

    /// What keeps a mixture's `state` from going on here, in words: other sources or seed,
    /// a packing at which a source has no window.
    fn mixture_differs(&self, state: &LoaderState) -> Vec<&'static str> {
        let (blend, saved) = match (&self.blend, &state.mixture) {
            (None, None) => return Vec::new(),
            (Some(blend), Some(saved)) => (blend, saved),
            (Some(_), None) if state.read.is_empty() => return Vec::new(),
            _ => {
                return vec![
                    "a mixture in one, not in the other (or a state saved without its stream)",
                ];
            }
        };
        let input = (&self.config, &self.inputs.lengths[..]);
        let epoch = state.position().epoch;
        let parts = state.read.len();
        let own = self.own_stream(epoch).expect("a mixture");
        if own.sources != saved.sources || !saved.fits(blend.num_sources()) {
            return vec!["the mixture's sources or its seed"];
        }
        let fits = |p| Some(p) == self.config.packing || self.packing_fits(blend, p);
        if !(saved.packs.iter()).all(|&(_, p)| fits(p)) {
            return vec![
                "the packing of a packed mixture (a packing at which a source has no window)",
            ];
        }
        // Changes of weights within the epoch: at its places (packed anew within it, an
        // epoch has at most a place a token, and one more a part).
        let places = (blend.with_stream((&Taken::of(&saved.switches), &saved.packs), input))
            .epoch_places(epoch);
        let tokens: u128 = self.inputs.lengths.iter().map(|&n| u128::from(n)).sum();
        let end = places.start + (places.end - places.start).max(tokens) + parts as u128;
        let outside = |c: &Change| c.part > parts || c.start < places.start || c.start > end;
        if saved.changes.iter().any(outside) {
            return vec!["the mixture's sources or its seed"];
        }
        Vec::new()
    }

    /// `state`, a packed mixture's stream saved without its packings (by a version that
    /// kept none) packed throughout as its first part, or at its epoch's start this loader,
    /// packs; without them when this loader does not pack (packing turned on or off is
    /// refused within an epoch).
    fn packs_kept(&self, state: &LoaderState) -> LoaderState {
        let mut state = state.clone();
        if let Some(stream) = state.mixture.as_mut() {
            match self.config.packing {
                None => stream.packs.clear(),
                Some(own) if stream.packs.is_empty() => {
                    let packing = state.read.first().and_then(|(c, _)| c.packing);
                    stream.packs.push((0, packing.unwrap_or(own)));
                }
                Some(_) => {}
            }
        }
        state
    }

    /// Whether `packing` is one this loader's options take and at which every source of
    /// `blend` has a window.
    fn packing_fits(&self, blend: &Blend, packing: crate::loader::pack::Packing) -> bool {
        let config = PlanConfig {
            packing: Some(packing),
            ..self.config.clone()
        };
        let input = (&self.config, &self.inputs.lengths[..]);
        config.validate().is_ok() && blend.has_windows(packing, input)
    }

    /// Whether `state`'s mixture stream (if any) is this loader's.
    fn same_stream(&self, state: &LoaderState) -> bool {
        let (Some(blend), Some(saved)) = (&self.blend, &state.mixture) else {
            return true;
        };
        let input = (&self.config, &self.inputs.lengths[..]);
        let own = self.own_stream(state.position().epoch).expect("a mixture");
        saved
            .of_part(state.read.len(), blend, input)
            .is(&own.switches)
            && saved.packs == own.packs
    }

    /// Whether this loader's own plan of `state`'s epoch was read in the parts the state
    /// says (then [`Loader::seek`] goes on from it exactly).
    fn made_parts(&mut self, state: &LoaderState) -> bool {
        let position = state.position();
        if state.read.is_empty() {
            return true;
        }
        self.plan = None;
        self.position = (position.epoch, 0);
        let plan = self.current_plan();
        let same = |(a, x): &(PlanConfig, usize), (b, y): &(PlanConfig, usize)| {
            x == y && a.plan_key() == b.plan_key()
        };
        let own = plan.parts.read_before(position.batch);
        own.len() == state.read.len() && own.iter().zip(&state.read).all(|(a, b)| same(a, b))
    }

    /// What keeps `state` from going on under this loader's options, in words (`same_data`:
    /// [`Loader::same_data`] of its lengths).
    fn refused_change(&self, state: &LoaderState, same_data: bool) -> Vec<&'static str> {
        let saved = &state.position().fingerprint;
        let mut differs = self.fingerprint().differences(saved);
        differs.retain(|d| !d.starts_with("the options") && *d != LENGTHS_DIFFER);
        if !same_data {
            differs.push(LENGTHS_DIFFER);
        }
        let turns = |c: &PlanConfig| matches!(c.ranks, Ranks::Turns { .. });
        if state.read.is_empty()
            || !turns(&self.config)
            || state.read.iter().any(|(c, _)| !turns(c))
        {
            differs.push("the options, and the state or this loader shards by parts (only ranks taking turns, elastic_shard, resume under other options)");
        }
        if state
            .read
            .iter()
            .any(|(c, _)| c.shuffle != self.config.shuffle)
        {
            differs.push("the shuffle or its seed");
        }
        if state
            .read
            .iter()
            .any(|(c, _)| c.packing.is_some() != self.config.packing.is_some())
        {
            differs.push("packing (on in one, off in the other)");
        }
        differs
    }

    /// Whether `saved`, a position's hash of the samples' lengths, is of this loader's
    /// samples: the same hash; or, where one of the two loaders counted every sample as 1
    /// (over shards, batches of a number of samples: [`LoaderBuilder::with_lazy_shards`]),
    /// as many samples (the saved hash that of as many 1s), or the same lengths (this
    /// loader's read now from the lengths index or the shards' metadata, and kept: the
    /// state's parts are replayed with them).
    ///
    /// # Errors
    /// Reading the lengths: the index's or the shards' metadata's errors.
    ///
    /// [`LoaderBuilder::with_lazy_shards`]: super::LoaderBuilder::with_lazy_shards
    fn same_data(&mut self, saved: u64) -> Result<bool> {
        let n = self.inputs.lengths.len();
        if saved == self.fingerprint.lengths || saved == lengths_hash(std::iter::repeat_n(1, n)) {
            return Ok(true);
        }
        let Some(lengths) = self.store.measure_lengths() else {
            return Ok(false);
        };
        let lengths = lengths?;
        if lengths_hash(lengths.iter().copied()) != saved {
            return Ok(false);
        }
        self.inputs.lengths = lengths;
        Ok(true)
    }

    /// The places of `epoch` for its parts: a loader's order, or a mixture's draws (by
    /// `blend`), by the stream of each of its `read` parts and then by this loader's.
    pub(super) fn epoch_items(
        &self,
        blend: Option<&Arc<Blend>>,
        read: usize,
        stream: Option<&Stream>,
        epoch: u64,
    ) -> Vec<(usize, parts::Epoch)> {
        let lengths = &self.inputs.lengths[..];
        let Some(blend) = blend else {
            return vec![(
                0,
                parts::Epoch::of_dataset(&self.config, &self.inputs, epoch),
            )];
        };
        let Some(stream) = stream else {
            return vec![(0, blend.epoch(&self.config, lengths, epoch))];
        };
        let mut out = Vec::new();
        let mut last = None;
        let input = (&self.config, lengths);
        for part in 0..=read {
            let given = stream.of_part(part, blend, input);
            if last.as_ref() != Some(&given) {
                let taken = blend.with_stream((&given, &stream.packs), input);
                out.push((part, taken.epoch(&self.config, lengths, epoch)));
                last = Some(given);
            }
        }
        out
    }

    /// Global tokens read before `epoch`: known from the epoch before or a restored
    /// state, or with a schedule counted by planning every epoch before it.
    pub(super) fn tokens_before(&self, epoch: u64) -> Option<u64> {
        match self.tokens {
            Some((e, t)) if e == epoch => return Some(t),
            _ if self.schedules.is_empty() => return None,
            // Counted with the packings the epochs before took over.
            _ if self.may_repack() && epoch >= self.packs_through.0 => {
                return self.blend_through(epoch).map(|(_, t)| t);
            }
            _ => {}
        }
        let (mut at, mut tokens) = match self.tokens {
            Some((e, t)) if e < epoch => (e, t),
            _ => (0, 0),
        };
        while at < epoch {
            let plan = self.plan_after(at, Some(tokens));
            tokens = tokens.saturating_add(parts::read_tokens(&plan, &self.config));
            at += 1;
        }
        Some(tokens)
    }
}
