//! The plan of an epoch, and a packed mixture's packings over its epochs: a part that packs
//! otherwise than the mixture's stream where it starts (a pack-length schedule's switch, a
//! resume under another pack length) draws the epoch's places anew from there
//! (`mix/repack.rs`), and the epochs after it are drawn by the stream so packed.

use std::sync::Arc;

use super::Loader;
use super::config::PlanConfig;
use super::mix::{Blend, Stream};
use super::pack::{Packing, Windows};
use super::parts::{self, Parts};
use super::plan::Plan;
use super::store::PlanInputs;

/// A packed mixture's epoch drawn anew where a part packs otherwise: its blend, the stream
/// its parts were drawn by (a state's), and the loader's options and lengths.
pub(super) struct Remixer<'a> {
    blend: &'a Arc<Blend>,
    stream: Option<&'a Stream>,
    input: (&'a PlanConfig, &'a [u32]),
    epoch: u64,
}

impl Remixer<'_> {
    /// The packing in force at place `at` of the epoch, packed anew at `made` (places of the
    /// epoch, packings) within it.
    pub(super) fn packing_at(&self, made: &[(usize, Packing)], at: usize) -> Option<Packing> {
        let blend = self.blend;
        match self.stream {
            Some(s) => blend.packing_by(&s.packs, self.epoch, (made, at), self.input),
            None => blend.packing_in(self.epoch, (made, at), self.input.0.packing),
        }
    }

    /// The epoch's windows by part `part`'s stream, packed anew at `made` within it.
    pub(super) fn windows(&self, part: usize, made: &[(usize, Packing)]) -> Arc<Windows> {
        let (blend, input) = (self.blend, self.input);
        match self.stream {
            Some(s) => {
                let given = s.of_part(part, blend, input);
                let drawn = blend.with_stream((&given, &s.packs), input);
                drawn.remixed(input, self.epoch, made)
            }
            None => blend.remixed(input, self.epoch, made),
        }
    }
}

impl Loader {
    /// Makes the plan of `epoch`, `tokens` global tokens read before it (when known).
    pub(super) fn plan_after(&self, epoch: u64, tokens: Option<u64>) -> Plan {
        let blend = self.blend_at(epoch);
        self.plan_by(blend.as_ref(), epoch, tokens)
    }

    /// [`Loader::plan_after`] with a mixture's stream drawn by `blend`.
    fn plan_by(&self, blend: Option<&Arc<Blend>>, epoch: u64, tokens: Option<u64>) -> Plan {
        let (read, stream) = match &self.resumed {
            Some(r) if r.epoch == epoch => (&r.read[..], r.mixture.as_ref()),
            _ => (&[][..], None),
        };
        let lengths = &self.inputs.lengths[..];
        let input = (&self.config, lengths);
        // A packed mixture whose stream packs otherwise where the epoch starts.
        let repack = blend.is_some_and(|b| {
            b.packing_at(epoch)
                .is_some_and(|p| Some(p) != self.config.packing)
        });
        let mut plan = if !read.is_empty() || !self.schedules.is_empty() || repack {
            let items = self.epoch_items(blend, read.len(), stream, epoch);
            let remixer = (blend.filter(|_| self.config.packing.is_some())).map(|blend| Remixer {
                blend,
                stream,
                input,
                epoch,
            });
            let options = (&self.config, &self.schedules);
            let items = (items, lengths, remixer.as_ref());
            let planned = parts::plan(read, options, tokens.unwrap_or(0), items, epoch);
            // A state's parts were replayed when it was restored.
            planned.unwrap_or_else(|| Plan::empty(epoch))
        } else {
            let mut plan = match blend {
                Some(blend) => blend.plan(&self.config, lengths, epoch),
                None => {
                    let PlanInputs { rows, shards, .. } = &self.inputs;
                    Plan::build(&self.config, lengths, rows, shards, epoch)
                }
            };
            plan.parts = Parts {
                starts: vec![(0, self.config.of_every_rank())],
                own: 0,
                tokens_before: tokens,
                mixture: None,
                read_end: 0,
                repacks: Vec::new(),
            };
            plan
        };
        plan.parts.mixture = match stream {
            Some(stream) => Some(stream.clone()),
            None => blend.map(|b| b.stream(&self.config, lengths, epoch)),
        };
        plan
    }

    /// Whether a packed mixture's stream may pack otherwise over the epochs: with a pack
    /// length schedule, or a stream taken over.
    pub(super) fn may_repack(&self) -> bool {
        self.config.packing.is_some()
            && (self.blend.as_ref())
                .is_some_and(|b| self.schedules.pack.is_some() || b.taken().is_some())
    }

    /// The mixture's blend epoch `epoch` is drawn by: packed as its stream was before the
    /// epoch, the epochs from [`Loader::packs_through`] on planned to find where their
    /// parts packed anew.
    pub(super) fn blend_at(&self, epoch: u64) -> Option<Arc<Blend>> {
        let blend = self.blend.as_ref()?;
        match self.may_repack() && epoch < self.packs_through.0 {
            true => Some(Arc::new(blend.before_epoch(epoch))),
            false => self.blend_through(epoch).map(|(b, _)| b),
        }
    }

    /// The blend of epoch `epoch` (at or past [`Loader::packs_through`]'s) and the global
    /// tokens read before it.
    pub(super) fn blend_through(&self, epoch: u64) -> Option<(Arc<Blend>, u64)> {
        let mut blend = self.blend.clone()?;
        let (through, mut tokens) = self.packs_through;
        if !self.may_repack() {
            return Some((blend, tokens));
        }
        let input = (&self.config, &self.inputs.lengths[..]);
        for at in through..epoch {
            let plan = self.plan_by(Some(&blend), at, Some(tokens));
            tokens = tokens.saturating_add(parts::read_tokens(&plan, &self.config));
            blend = Arc::new(blend.with_repacks(at, &plan.parts.repacks, input));
        }
        Some((blend, tokens))
    }

    /// Goes to epoch `epoch` (at or past [`Loader::packs_through`]'s): the blend packing
    /// its stream anew where the epochs before it did.
    pub(super) fn packs_to(&mut self, epoch: u64) {
        if self.may_repack() && epoch > self.packs_through.0 {
            let (blend, tokens) = self.blend_through(epoch).expect("may_repack: a mixture");
            (self.blend, self.packs_through) = (Some(blend), (epoch, tokens));
        }
    }

    /// Goes past `plan` (of the epoch [`Loader::packs_through`] counts): the blend
    /// packing its stream anew where the plan did.
    pub(super) fn packs_past(&mut self, plan: &Plan) {
        let (through, tokens) = self.packs_through;
        if !self.may_repack() || plan.epoch() != through {
            return;
        }
        let input = (&self.config, &self.inputs.lengths[..]);
        let blend = self.blend.as_ref().expect("may_repack: a mixture");
        let repacked = blend.with_repacks(through, &plan.parts.repacks, input);
        self.blend = Some(Arc::new(repacked));
        let read = parts::read_tokens(plan, &self.config);
        self.packs_through = (through + 1, tokens.saturating_add(read));
    }

    /// The mixture's stream to the end of epoch `epoch`, drawn by this loader.
    pub(super) fn own_stream(&self, epoch: u64) -> Option<Stream> {
        let blend = self.blend_at(epoch)?;
        Some(blend.stream(&self.config, &self.inputs.lengths, epoch))
    }
}
