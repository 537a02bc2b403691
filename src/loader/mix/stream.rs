//! A mixture's stream as a state carries it, and taken over by a loader with other
//! weights: the samples before the first place no read batch holds keep their draws, the
//! rest are drawn by the new weights, the rule starting afresh there and each source's
//! stream going on where it was (as a weight schedule's switch does, at a sample); new
//! weights that are a schedule are taken up there by their set at the tokens drawn, the
//! later sets found by walking the stream on (`rules.rs`). A packed mixture's stream taken
//! over at another packing packs each source's tokens no window drawn before that place
//! holds again (`repack.rs`).

use std::sync::Arc;

use super::Blend;
use super::rules::Rules;
use crate::loader::config::PlanConfig;
use crate::loader::pack::Packing;
use crate::loader::position::Hasher;

/// A mixture's stream as a state carries it: a hash of its sources and seed, where its
/// weights took over from its first sample to the end of the state's epoch, the changes
/// of weights made within the epoch by loaders that resumed it, and (packed) where each
/// packing took over before the epoch, the first at 0 (within the epoch, its parts'
/// options say).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stream {
    pub sources: u64,
    pub switches: Vec<Given>,
    pub changes: Vec<Change>,
    pub packs: Vec<(u128, Packing)>,
}

/// Where a set of weights took over: its first sample of the stream, each source's draws
/// before it, and the weights (normalized).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Given {
    pub start: u128,
    pub drawn: Vec<u128>,
    pub weights: Vec<f64>,
}

/// Other weights from sample `start` of the stream on, from part `part` of the epoch
/// (the first planned by the loader that took the stream over): one set, or a schedule
/// (`weights` its first set, `later` the others, at their points in tokens drawn).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Change {
    pub part: usize,
    pub start: u128,
    pub weights: Vec<f64>,
    pub later: Vec<(u64, Vec<f64>)>,
}

/// A stream as a part of an epoch was drawn by: its switches given (the first at 0), then
/// each schedule taken up from its first place on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Taken {
    pub given: Vec<Given>,
    pub tails: Vec<Tail>,
}

/// A schedule of weights (points in tokens drawn, the first at 0) taken up at sample
/// `start` of a stream: from there, by its set at the tokens drawn before `start`, then
/// each later set at the first sample at or past its point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tail {
    pub start: u128,
    pub points: Vec<(u64, Vec<f64>)>,
}

impl Taken {
    /// The stream of `switches` alone.
    pub fn of(switches: &[Given]) -> Self {
        Taken {
            given: switches.to_vec(),
            tails: Vec::new(),
        }
    }

    /// Whether it is the stream of `switches` alone.
    pub fn is(&self, switches: &[Given]) -> bool {
        self.tails.is_empty() && self.given == switches
    }
}

impl Stream {
    /// The switches part `part` of the epoch was drawn by: the stream's, with the changes
    /// of every part up to it.
    pub fn of_part(&self, part: usize, blend: &Blend, input: (&PlanConfig, &[u32])) -> Taken {
        let mut taken = Taken::of(&self.switches);
        for change in self.changes.iter().filter(|c| c.part <= part) {
            taken = blend.switched(taken, change, input);
        }
        taken
    }

    /// Whether the stream's switches fit `sources` sources: one set of weights and of draws
    /// per source at each, the first at 0 with nothing drawn, each with as many draws as
    /// its first sample's place.
    pub fn fits(&self, sources: usize) -> bool {
        let fits = |g: &Given| {
            g.drawn.len() == sources
                && g.weights.len() == sources
                && g.drawn.iter().try_fold(0u128, |a, &d| a.checked_add(d)) == Some(g.start)
                && (g.weights.iter().sum::<f64>() - 1.0).abs() < 1e-6
        };
        let set = |w: &Vec<f64>| w.len() == sources && (w.iter().sum::<f64>() - 1.0).abs() < 1e-6;
        let changes = (self.changes.iter()).all(|c| {
            set(&c.weights)
                && c.later.iter().all(|(_, w)| set(w))
                && (c.later.iter().map(|p| p.0))
                    .try_fold(0, |a, b| (b > a).then_some(b))
                    .is_some()
        });
        let packs = self.packs.first().is_none_or(|r| r.0 == 0)
            && (self.packs.windows(2)).all(|r| r[0].0 < r[1].0);
        self.switches.first().is_some_and(|g| g.start == 0)
            && self.switches.iter().all(fits)
            && changes
            && packs
    }
}

impl Blend {
    /// This blend drawing by the stream `taken`, its own weights kept for what it
    /// compares states with.
    pub(crate) fn with_taken(&self, taken: &Taken) -> Blend {
        let wide = |n: u128| [n as u64, (n >> 64) as u64];
        let mut words: Vec<u64> = (taken.given.iter())
            .flat_map(|g| {
                let drawn = g.drawn.iter().flat_map(|&d| wide(d));
                let weights = g.weights.iter().map(|w| w.to_bits());
                wide(g.start).into_iter().chain(drawn).chain(weights)
            })
            .collect();
        // A schedule taken up (none: the hash of switches given alone, as before).
        for tail in &taken.tails {
            words.extend([TAKEN_UP, tail.points.len() as u64]);
            words.extend(wide(tail.start));
            for (from, weights) in &tail.points {
                words.push(*from);
                words.extend(weights.iter().map(|w| w.to_bits()));
            }
        }
        let mut hash = Hasher::new();
        hash.add(&words);
        let rules = Rules::of_taken(taken, self.parts.len());
        self.with_rules(Arc::new(rules), Some(hash.finish()))
    }

    /// This blend drawing by the stream `taken` and packing by `packs` (a stream taken
    /// over), its fingerprint's hash of the stream the two's.
    pub(crate) fn with_stream(
        &self,
        (taken, packs): (&Taken, &[(u128, Packing)]),
        input: (&PlanConfig, &[u32]),
    ) -> Blend {
        let mut blend = self.with_taken(taken);
        if !packs.is_empty() {
            let mut hash = Hasher::new();
            hash.add(&[blend.taken.unwrap_or(0)]);
            for &(start, packing) in packs {
                let mode = match packing.mode() {
                    crate::loader::pack::PackMode::Split { pad_last } => u64::from(pad_last),
                    crate::loader::pack::PackMode::BestFit {
                        lookahead,
                        overlong,
                    } => {
                        2 + 2 * lookahead as u64
                            + u64::from(overlong == crate::loader::pack::Overlong::Drop)
                    }
                };
                let words = [start as u64, (start >> 64) as u64, packing.seq_len() as u64];
                hash.add(&words);
                hash.add(&[u64::from(packing.extra_token()), mode]);
            }
            blend = blend.with_packs(packs, input);
            blend.taken = Some(hash.finish());
        }
        blend
    }

    /// This blend by its own weights (none taken over).
    pub(crate) fn own(&self) -> Blend {
        self.with_rules(self.own.clone(), None)
    }

    pub(super) fn with_rules(&self, rules: Arc<Rules>, taken: Option<u64>) -> Blend {
        Blend {
            rules,
            own: self.own.clone(),
            taken,
            seed: self.seed,
            rows: self.rows.clone(),
            parts: self.parts.clone(),
            firsts: self.firsts.clone(),
            packs: super::Packs::default(),
        }
    }

    /// The number of sources.
    pub(crate) fn num_sources(&self) -> usize {
        self.parts.len()
    }

    /// A hash of the stream taken over, if one was ([`Blend::with_taken`]).
    pub(crate) fn taken(&self) -> Option<u64> {
        self.taken
    }

    /// The weights of its own, when they are one set (not a schedule).
    pub(crate) fn one_set(&self) -> Option<&[f64]> {
        (self.own.rules.len() == 1).then(|| &self.own.rules[0].weights[..])
    }

    /// `taken` to sample `change.start`, then `change`'s weights from there: one set
    /// switched to there, each source's draws before it counted by `taken`; a schedule
    /// (or any change after one) taken up there, found by walking the stream as packed.
    pub(crate) fn switched(
        &self,
        mut taken: Taken,
        change: &Change,
        input: (&PlanConfig, &[u32]),
    ) -> Taken {
        let start = change.start;
        taken.given.retain(|g| g.start < start);
        taken.tails.retain(|t| t.start < start);
        if !(change.later.is_empty() && taken.tails.is_empty()) {
            let first = (0, change.weights.clone());
            let points = std::iter::once(first).chain(change.later.iter().cloned());
            taken.tails.push(Tail {
                start,
                points: points.collect(),
            });
            return taken;
        }
        let drawn = match taken.given.is_empty() {
            true => vec![0; self.parts.len()],
            false => {
                let before = self.with_taken(&taken);
                let switches = before.rules.switches(&before, input, start);
                before.drawn_before(&switches, start)
            }
        };
        taken.given.push(Given {
            start,
            drawn,
            weights: change.weights.clone(),
        });
        taken
    }

    /// Its own weights' points (tokens drawn, normalized weights).
    pub(crate) fn own_points(&self) -> Vec<(u64, Vec<f64>)> {
        (self.own.rules.iter())
            .map(|r| (r.from, r.weights.clone()))
            .collect()
    }
}

/// Hashed before a schedule taken up by a stream.
const TAKEN_UP: u64 = 0x7461_6b65_6e75_7030;
