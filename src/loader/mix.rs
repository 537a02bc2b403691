//! Weighted mixing: one loader drawing its samples (or packed windows) from several
//! sources at set proportions, each source keeping its own epochs and shuffles.
//!
//! The rule, like Megatron-LM's BlendedDataset's, draws the next sample from a source below
//! its share: Tijdeman's rule ([`draw_with`]), which keeps every source's count within
//! `1 − 1/(2K − 2)` samples of its share after every sample, `K` sources. (Megatron's, the
//! source with the largest `weights[k]·max(i, 1) − drawn[k]`, falls more than a sample
//! behind at some prefixes with four sources or more.) Source `k`'s `j`-th draw
//! is the `j`-th sample of its own stream: its epochs one after the other, each ordered as a
//! loader over that source alone would order it (its own seed, derived from the options'
//! seed, the mixture's seed and `k`), so a small source repeats and a large one is not
//! exhausted. The mixture's epoch is as many samples as the sources' first epochs hold
//! together (a packed mixture's pack length changed within it moves its end: `repack.rs`);
//! its batches, ranks (`shard`, `elastic_shard`), `drop_last` and positions are a loader's.
//! Every source must have the same columns (name, type, levels and offset width).

use std::ops::Range;
use std::sync::Arc;

use super::LoaderSource;
use super::config::{PlanConfig, Shuffle};
use super::order::{Rows, Slot, epoch_rows, fits_u32};
use super::pack::{Packing, Piece, Windows, window_order, windows_of_pieces};
use super::parts::Epoch;
use super::plan::{Costs, Plan};
use super::position::Hasher;
use super::schedule::Schedules;
use crate::error::{ArgumentError, Result};
use crate::rng::SplitMix64;
use crate::row_index::RowIndex;
pub(super) use read::read_mixture;
use read::weights_error;
use repack::Packs;
use rules::{Rules, Switch};
pub(crate) use stream::{Change, Given, Stream, Taken};

/// Sources and their weights, for [`Loader::builder`](super::Loader::builder).
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let (a, b) = (MappedDataset::open(&path)?, MappedDataset::open(&path)?);
/// use lodtensor::loader::{Loader, Mixture};
/// let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![0.75, 0.25]);
/// let mut loader = Loader::builder(&mixture).with_batch_size(4).with_shuffle(1).build()?;
/// let batch = loader.next_batch()?.expect("a batch");
/// assert_eq!(batch.sources().expect("a mixture"), [0, 0, 1, 0]);   // 3 : 1
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Mixture<'a> {
    sources: Vec<LoaderSource<'a>>,
    /// The weights from each point in tokens drawn (one point, at 0, without a schedule).
    points: Vec<(u64, Vec<f64>)>,
    seed: u64,
}

impl<'a> Mixture<'a> {
    /// `sources` drawn from in proportion to `weights` (any positive numbers; they are
    /// normalized). Checked by [`LoaderBuilder::build`](super::LoaderBuilder::build).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let a = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Mixture};
    /// let refused = Mixture::new(vec![(&a).into()], vec![0.5, 0.5]);
    /// assert!(Loader::builder(&refused).build().is_err());      // a weight for every source
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(sources: Vec<LoaderSource<'a>>, weights: Vec<f64>) -> Self {
        Mixture {
            sources,
            points: vec![(0, weights)],
            seed: 0,
        }
    }

    /// Weights that change over training: each set from the first sample of the mixture's
    /// stream at or past its point in tokens drawn (a sample's length, a packed window's
    /// tokens), the rule starting afresh there, so each source stays within a sample of its
    /// share of the samples drawn under each set. Replaces the weights given to
    /// [`Mixture::new`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let (a, b) = (MappedDataset::open(&path)?, MappedDataset::open(&path)?);
    /// use lodtensor::loader::{Loader, Mixture, Schedule};
    /// // All from source 0, then (6 tokens drawn: samples of 1, 2 and 3) all from source 1.
    /// let weights = Schedule::new(vec![(0, vec![1.0, 0.0001]), (6, vec![0.0001, 1.0])])?;
    /// let mixture = Mixture::new(vec![(&a).into(), (&b).into()], vec![]).with_weight_schedule(weights);
    /// let mut loader = Loader::builder(&mixture).with_batch_size(5).build()?;
    /// assert_eq!(loader.next_batch()?.expect("a batch").sources().expect("a mixture"), [0, 0, 0, 1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_weight_schedule(mut self, schedule: super::Schedule<Vec<f64>>) -> Self {
        self.points = schedule.points().to_vec();
        self
    }

    /// Mixed into every source's shuffle seed, so that the same sources in two mixtures
    /// are shuffled apart.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let a = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Mixture};
    /// let one = Mixture::new(vec![(&a).into()], vec![1.0]);
    /// let other = one.clone().with_seed(2);
    /// let plan = |m: &Mixture| Loader::builder(m).with_shuffle(0).build().map(|l| l.plan(0));
    /// assert_ne!(plan(&one)?.samples(), plan(&other)?.samples());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The sources.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let a = MappedDataset::open(&path)?;
    /// use lodtensor::loader::Mixture;
    /// assert_eq!(Mixture::new(vec![(&a).into()], vec![1.0]).sources().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sources(&self) -> &[LoaderSource<'a>] {
        &self.sources
    }

    /// Each point's weights, normalized, after checking there is one per source, each
    /// finite and positive.
    pub(super) fn normalized_points(&self) -> Result<Vec<(u64, Vec<f64>)>> {
        if self.sources.is_empty() {
            return Err(weights_error(
                "a mixture needs at least one source".to_owned(),
            ));
        }
        (self.points.iter())
            .map(|(from, weights)| Ok((*from, self.normalized(weights, *from)?)))
            .collect()
    }

    /// `weights` (of the point at `from` tokens) normalized, after checking them.
    fn normalized(&self, weights: &[f64], from: u64) -> Result<Vec<f64>> {
        let at = if from == 0 {
            String::new()
        } else {
            format!(" (at {from} tokens)")
        };
        if weights.len() != self.sources.len() {
            let (w, s) = (weights.len(), self.sources.len());
            return Err(weights_error(format!(
                "{w} weights{at} for {s} sources: give one per source"
            )));
        }
        if let Some(i) = (weights.iter()).position(|w| !w.is_finite() || *w <= 0.0) {
            return Err(weights_error(format!(
                "weight {i}{at} is {}: must be positive",
                weights[i]
            )));
        }
        let sum: f64 = weights.iter().sum();
        Ok(weights.iter().map(|w| w / sum).collect())
    }

    pub(super) fn seed(&self) -> u64 {
        self.seed
    }
}

/// What a mixed loader knows of its sources.
#[derive(Debug)]
pub(crate) struct Blend {
    /// The weights over the stream: one set, a schedule's, or a stream's taken over.
    rules: Arc<Rules>,
    /// Its own weights.
    own: Arc<Rules>,
    /// A hash of the stream taken over, if one was.
    taken: Option<u64>,
    seed: u64,
    /// Where every source's rows start among the loader's rows.
    pub rows: RowIndex,
    /// Each source's record batches and shards, in its own rows.
    parts: Vec<(RowIndex, RowIndex)>,
    /// Samples in each source's first epoch, and in the mixture's epoch (their sum).
    firsts: Vec<usize>,
    /// The packings of its stream from where each took over (none: the options' throughout).
    packs: Packs,
}

/// An epoch's draws: its samples of the mixture's stream, the switches over them, and
/// each source's draws before and after them.
struct Draws {
    switches: Vec<Switch>,
    samples: Range<u128>,
    before: Vec<u128>,
    after: Vec<u128>,
}

/// The samples of one epoch of one source: its own rows (numbered from its first), or
/// packed windows.
#[derive(Debug)]
enum SourceEpoch {
    Rows(Rows),
    Windows(Windows, Vec<usize>),
}

impl SourceEpoch {
    fn len(&self) -> usize {
        match self {
            SourceEpoch::Rows(rows) => rows.len(),
            SourceEpoch::Windows(_, order) => order.len(),
        }
    }

    /// The tokens of sample `i`: its length (`lengths` of the loader's rows, the source's
    /// first at `first_row`), or its window's tokens.
    fn tokens_of(&self, i: usize, lengths: &[u32], first_row: usize) -> usize {
        match self {
            SourceEpoch::Rows(rows) => lengths[first_row + rows.get(i)] as usize,
            SourceEpoch::Windows(windows, order) => windows.tokens_of(order[i]),
        }
    }
}

/// [`draw_with`] for sample `i`, the count of source `k` before it `drawn[k]`.
#[cfg(test)]
pub(crate) fn draw(weights: &[f64], i: u64, drawn: &[u64]) -> usize {
    draw_with(weights, i as f64, |k| drawn[k] as f64)
}

/// The source of sample `i` (as a float), given the samples each source gave before it
/// (source `k` `drawn(k)`): Tijdeman's rule for the chairman assignment problem. Of the
/// sources at least `δ = 1/(2K − 2)` samples below their share of the `i + 1` samples, the
/// one whose next sample falls due first (the least `(drawn + 1 − δ) / weight`; the first
/// on a tie). Every count then stays within `1 − δ` of its share after every sample.
fn draw_with(weights: &[f64], i: f64, drawn: impl Fn(usize) -> f64) -> usize {
    if weights.len() == 1 {
        return 0;
    }
    let n = i + 1.0;
    let delta = 1.0 / (2 * weights.len() - 2) as f64;
    let mut best: Option<(usize, f64)> = None;
    for (k, &w) in weights.iter().enumerate() {
        let d = drawn(k);
        // The tolerance keeps rounding from leaving every source out.
        if w * n - d >= delta - 1e-9 {
            let due = (d + 1.0 - delta) / w;
            if best.is_none_or(|(_, b)| due < b) {
                best = Some((k, due));
            }
        }
    }
    best.map_or(0, |(k, _)| k)
}

/// The longest period of the rule looked for (weights with up to 6 decimals have one).
const MAX_PERIOD: u64 = 1 << 20;

/// The rule's period for `weights`: the least `q` (at most [`MAX_PERIOD`]) for which every
/// `weights[k]·q` is an integer, with those integers. After `m·q` samples Tijdeman's rule
/// has drawn exactly `m·weights[k]·q` of source `k` (an integer count within less than a
/// sample of an integer share is that share), so from there it draws as from the start:
/// the sources of samples `i` and `i mod q` are the same.
fn rule_period(weights: &[f64]) -> Option<(u64, Vec<u64>)> {
    let whole = |share: f64| (share - share.round()).abs() < 1e-9;
    let q = (1..=MAX_PERIOD).find(|&q| weights.iter().all(|w| whole(w * q as f64)))?;
    let shares: Vec<u64> = weights
        .iter()
        .map(|w| (w * q as f64).round() as u64)
        .collect();
    (shares.iter().sum::<u64>() == q).then_some((q, shares))
}

impl Blend {
    /// The blend of sources whose record batches and shards are `parts`, in order, drawn
    /// by the normalized weights of each of `points` from its point in tokens drawn.
    pub(super) fn new(
        points: Vec<(u64, Vec<f64>)>,
        seed: u64,
        parts: Vec<(RowIndex, RowIndex)>,
    ) -> Self {
        let rows = RowIndex::from_counts(parts.iter().map(|(b, _)| b.num_rows()));
        let rules = Arc::new(Rules::new(points, parts.len()));
        Blend {
            own: rules.clone(),
            taken: None,
            rules,
            seed,
            rows,
            parts,
            firsts: Vec::new(),
            packs: Packs::default(),
        }
    }

    /// Counts every source's first epoch.
    ///
    /// # Errors
    /// [`ArgumentError::LoaderConfig`] for a source without samples (no rows, or too few
    /// tokens for a window, at the options' pack length or one `schedules` gives).
    pub(super) fn count_first_epochs(
        &mut self,
        config: &PlanConfig,
        schedules: &Schedules,
        lengths: &[u32],
    ) -> Result<()> {
        self.firsts = (0..self.parts.len())
            .map(|k| self.source_epoch(config, lengths, k, 0).len())
            .collect();
        if let Some(k) = self.firsts.iter().position(|&n| n == 0) {
            return Err(ArgumentError::LoaderConfig {
                option: "weights",
                reason: format!("source {k} has no samples to draw (no rows, or no window)"),
            }
            .into());
        }
        self.windows_at(config, schedules, lengths)
    }

    /// The options of source `k` alone: its own shuffle seed.
    fn source_config(&self, config: &PlanConfig, k: usize) -> PlanConfig {
        let mut mixer = SplitMix64::new(self.seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let salt = mixer.next_u64();
        let shuffle = match config.shuffle {
            Shuffle::None => Shuffle::None,
            Shuffle::Samples { seed } => Shuffle::Samples { seed: seed ^ salt },
            Shuffle::Chunks { seed, rows } => Shuffle::Chunks {
                seed: seed ^ salt,
                rows,
            },
            Shuffle::Windowed { seed, rows, window } => Shuffle::Windowed {
                seed: seed ^ salt,
                rows,
                window,
            },
        };
        PlanConfig {
            shuffle,
            ..config.clone()
        }
    }

    /// Epoch `epoch` of source `k` alone, in the loader's rows.
    fn source_epoch(
        &self,
        config: &PlanConfig,
        lengths: &[u32],
        k: usize,
        epoch: u64,
    ) -> SourceEpoch {
        let rows = self.rows.part_rows(k);
        let (batches, shards) = &self.parts[k];
        let config = self.source_config(config, k);
        let order = epoch_rows(config.shuffle, rows.len(), batches, shards, epoch);
        match &config.packing {
            None => SourceEpoch::Rows(order),
            Some(packing) => {
                let windows = Windows::build(packing, &lengths[rows], order);
                let order = window_order(&config, windows.len(), epoch);
                SourceEpoch::Windows(windows, order)
            }
        }
    }

    /// Rows `from..to` of source `k`'s stream, as rows of the loader in `S` (not packing).
    fn source_rows<S: Slot>(
        &self,
        config: &PlanConfig,
        lengths: &[u32],
        k: usize,
        range: (u128, u128),
    ) -> Vec<S> {
        let mut out = Vec::with_capacity((range.1 - range.0) as usize);
        let first_row = self.rows.part_rows(k).start;
        self.source_walk((config, lengths), k, range, |samples, part| {
            if let SourceEpoch::Rows(rows) = samples {
                out.extend(rows.iter(part).map(|row| S::of(row + first_row)));
            }
        });
        out
    }

    /// Windows `from..to` of source `k`'s stream, each its pieces in the loader's rows
    /// (packing).
    fn source_windows(
        &self,
        config: &PlanConfig,
        lengths: &[u32],
        k: usize,
        range: (u128, u128),
    ) -> Vec<Vec<Piece>> {
        let mut out = Vec::with_capacity((range.1 - range.0) as usize);
        let first_row = self.rows.part_rows(k).start;
        self.source_walk((config, lengths), k, range, |samples, part| {
            if let SourceEpoch::Windows(w, order) = samples {
                out.extend(order[part].iter().map(|&window| {
                    (w.pieces(window).into_iter())
                        .map(|p| Piece {
                            row: p.row + first_row,
                            ..p
                        })
                        .collect()
                }));
            }
        });
        out
    }

    /// The plan of the mixture's epoch `epoch`: samples `epoch·n .. (epoch + 1)·n` of its
    /// stream, `n` the sources' first epochs together. The rule is walked twice, to count
    /// each source's draws and then to interleave them, rather than keep every sample's
    /// source.
    pub(super) fn plan(&self, config: &PlanConfig, lengths: &[u32], epoch: u64) -> Plan {
        let draws = self.draws_of(config, lengths, epoch);
        match &config.packing {
            None => {
                let costs = Costs::Lengths(config.weight());
                match fits_u32(lengths.len()) {
                    true => {
                        let order = self.rows_order::<u32>((config, lengths), &draws);
                        Plan::of_ranks(config, (lengths, &costs), &order, epoch)
                    }
                    false => {
                        let order = self.rows_order::<usize>((config, lengths), &draws);
                        Plan::of_ranks(config, (lengths, &costs), &order, epoch)
                    }
                }
            }
            Some(packing) => {
                let windows = self.windows_drawn((config, lengths), packing, draws);
                let n = windows.len();
                match fits_u32(n) {
                    true => windows.plan(config, &(0..n).map(u32::of).collect::<Vec<_>>(), epoch),
                    false => windows.plan(config, &(0..n).collect::<Vec<usize>>(), epoch),
                }
            }
        }
    }

    /// The mixture's epoch `epoch` place by place, as [`Blend::plan`] plans it: the row or
    /// the packed window drawn at each.
    pub(super) fn epoch(&self, config: &PlanConfig, lengths: &[u32], epoch: u64) -> Epoch {
        let draws = self.draws_of(config, lengths, epoch);
        match &config.packing {
            None => Epoch::Rows(self.rows_order::<usize>((config, lengths), &draws)),
            Some(packing) => Epoch::Windows(Arc::new(self.windows_drawn(
                (config, lengths),
                packing,
                draws,
            ))),
        }
    }

    /// The stream to the end of epoch `epoch`, as a state carries it.
    pub(super) fn stream(&self, config: &PlanConfig, lengths: &[u32], epoch: u64) -> Stream {
        let end = self.epoch_places(epoch).end;
        let switches = self.rules.switches(self, (config, lengths), end);
        let mut sources = Hasher::new();
        sources.add(&[self.seed]);
        sources.add(
            &self
                .rows
                .starts()
                .iter()
                .map(|&s| s as u64)
                .collect::<Vec<_>>(),
        );
        Stream {
            sources: sources.finish(),
            switches: self.rules.given(&switches, end),
            changes: Vec::new(),
            packs: self.packs_before(epoch, config.packing),
        }
    }

    /// The draws of epoch `epoch`: its samples of the stream, the switches over them and
    /// each source's draws before and after them.
    fn draws_of(&self, config: &PlanConfig, lengths: &[u32], epoch: u64) -> Draws {
        // In 128 bits: no epoch's samples wrap.
        let samples = self.epoch_places(epoch);
        let switches = self.rules.switches(self, (config, lengths), samples.end);
        let before = self.drawn_before(&switches, samples.start);
        let mut after = before.clone();
        self.draws(&switches, samples.clone(), &mut after, |_| {});
        Draws {
            switches,
            samples,
            before,
            after,
        }
    }

    /// The windows of `draws` (packing), in the order drawn.
    fn windows_drawn(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        packing: &Packing,
        draws: Draws,
    ) -> Windows {
        let mut windows: Vec<std::vec::IntoIter<Vec<Piece>>> = (0..self.parts.len())
            .map(|k| {
                let range = (draws.before[k], draws.after[k]);
                self.source_windows(config, lengths, k, range).into_iter()
            })
            .collect();
        let (mut pieces, mut starts) = (Vec::new(), vec![0]);
        let lens = self.window_lens(&draws.samples, packing);
        let mut drawn = draws.before;
        self.draws(&draws.switches, draws.samples, &mut drawn, |k| {
            pieces.extend(windows[k].next().expect("drawn"));
            starts.push(pieces.len());
        });
        windows_of_pieces(lens[0].1, pieces, starts).with_lens(lens)
    }

    /// The rows of `draws` (not packing), in the order drawn, as rows of the loader in `S`.
    fn rows_order<S: Slot>(
        &self,
        (config, lengths): (&PlanConfig, &[u32]),
        draws: &Draws,
    ) -> Vec<S> {
        let mut rows: Vec<std::vec::IntoIter<S>> = (0..self.parts.len())
            .map(|k| {
                let range = (draws.before[k], draws.after[k]);
                self.source_rows::<S>(config, lengths, k, range).into_iter()
            })
            .collect();
        let mut order = Vec::with_capacity(rows.iter().map(|r| r.len()).sum());
        let mut drawn = draws.before.clone();
        self.draws(&draws.switches, draws.samples.clone(), &mut drawn, |k| {
            order.push(rows[k].next().expect("drawn"));
        });
        order
    }

    /// Draws the mixture's `samples` in order: `visit(k)` with each one's source, `drawn`
    /// (each source's count before the first) counted on; `switches` cover the samples.
    fn draws(
        &self,
        switches: &[Switch],
        samples: Range<u128>,
        drawn: &mut [u128],
        mut visit: impl FnMut(usize),
    ) {
        let mut s = switches
            .partition_point(|w| w.start <= samples.start)
            .max(1)
            - 1;
        for i in samples {
            while switches.get(s + 1).is_some_and(|w| w.start <= i) {
                s += 1;
            }
            let k = self.rules.source_at(&switches[s], i, drawn);
            drawn[k] += 1;
            visit(k);
        }
    }

    /// Each source's samples among the mixture's first `i`: from the last switch before
    /// it, whole periods counted, the rest drawn (O(period)); without a period, every
    /// sample since the switch drawn.
    fn drawn_before(&self, switches: &[Switch], i: u128) -> Vec<u128> {
        let s = switches.partition_point(|w| w.start <= i).max(1) - 1;
        let (start, mut drawn) = self.rules.drawn_before(&switches[s], i);
        self.draws(switches, start..i, &mut drawn, |_| {});
        drawn
    }

    /// The words of the weights, seed and source sizes, hashed into the fingerprint.
    pub(super) fn hash_words(&self) -> Vec<u64> {
        let first = &self.own.rules[0].weights;
        let mut words = vec![5, self.seed, first.len() as u64];
        words.extend(first.iter().map(|w| w.to_bits()));
        // A schedule's later sets (none for one set: fingerprints as before).
        for rule in &self.own.rules[1..] {
            words.push(rule.from);
            words.extend(rule.weights.iter().map(|w| w.to_bits()));
        }
        words.extend(self.rows.starts().iter().map(|&s| s as u64));
        words
    }

    /// The source of every one of `rows` (rows of the loader).
    pub(super) fn source_of(&self, row: usize) -> (usize, usize) {
        self.rows
            .locate(row)
            .expect("plans hold rows of the sources")
    }
}

mod read;
mod repack;
mod rules;
mod stream;
#[cfg(test)]
mod tests;
