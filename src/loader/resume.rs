//! A loader's state, and going on from one saved under other options
//! ([`Loader::restore`]): the epoch's parts replayed, the rest planned over what they left.

use super::config::{PlanConfig, Ranks};
use super::parts;
use super::state::LoaderState;
use super::{Loader, Plan, Position};
use crate::error::{ArgumentError, Result};

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
                let mixture = (self.blend.as_ref())
                    .map(|b| b.stream(&self.config, &self.inputs.lengths, position.epoch));
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
    /// # Errors
    /// [`ArgumentError::PositionMismatch`] naming what differs when the change cannot keep
    /// every sample once (other data or record batches, another shuffle or seed, packing
    /// turned on or off, a mixture's, ranks sharded by parts on either side);
    /// [`ArgumentError::BatchOutOfRange`] when the state's batches are not in its plans.
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
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore(&mut self, state: &LoaderState) -> Result<()> {
        // A state refused leaves the loader where it was.
        let before = (
            self.position,
            self.plan.clone(),
            self.resumed.clone(),
            self.tokens,
        );
        let restored = self.restore_from(state);
        if restored.is_err() {
            (self.position, self.plan, self.resumed, self.tokens) = before;
        }
        restored
    }

    /// [`Loader::restore`], leaving the loader changed when it fails.
    fn restore_from(&mut self, state: &LoaderState) -> Result<()> {
        let position = state.position();
        if let Some(t) = state.tokens_before {
            self.tokens = Some((position.epoch, t));
        }
        self.resumed = None;
        if position.fingerprint == self.fingerprint && self.made_parts(state) {
            return self.seek(position);
        }
        let refused = |differs: Vec<&str>| {
            Err(ArgumentError::PositionMismatch {
                differs: differs.join("; "),
            }
            .into())
        };
        if position.batch == 0 && state.read.is_empty() {
            // At an epoch's start nothing of it was read: any options go on from there.
            if self.fingerprint.lengths != position.fingerprint.lengths {
                return refused(vec![
                    "the samples or their lengths (other data, or another length column)",
                ]);
            }
            self.position = (position.epoch, 0);
            return Ok(());
        }
        let differs = self.refused_change(state);
        if !differs.is_empty() {
            return refused(differs);
        }
        self.resumed = Some((position.epoch, state.read.clone()));
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
        Ok(())
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

    /// What keeps `state` from going on under this loader's options, in words.
    fn refused_change(&self, state: &LoaderState) -> Vec<&'static str> {
        let mut differs = self.fingerprint.differences(&state.position().fingerprint);
        differs.retain(|d| !d.starts_with("the options"));
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
        let own = (self.blend.as_ref())
            .map(|b| b.stream(&self.config, &self.inputs.lengths, state.position().epoch));
        match (&own, &state.mixture) {
            (None, None) => {}
            (Some(own), Some(saved)) => {
                if own.sources != saved.sources {
                    differs.push("the mixture's sources or its seed");
                }
                if own.switches != saved.switches {
                    differs.push("the mixture's weights (a mixture resumes under other options only with the same weights)");
                }
                let packing = |c: &PlanConfig| c.packing;
                if state
                    .read
                    .iter()
                    .any(|(c, _)| packing(c) != packing(&self.config))
                {
                    differs.push("the packing of a packed mixture (its windows are packed source by source as drawn: a packed mixture resumes under other options only at the same pack length and mode)");
                }
            }
            _ => differs.push("a mixture in one, not in the other"),
        }
        differs
    }

    /// Global tokens read before `epoch`: known from the epoch before or a restored
    /// state, or with a schedule counted by planning every epoch before it.
    pub(super) fn tokens_before(&self, epoch: u64) -> Option<u64> {
        match self.tokens {
            Some((e, t)) if e == epoch => return Some(t),
            _ if self.schedules.is_empty() => return None,
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
