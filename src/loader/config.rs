//! The options that decide an epoch's plan: how samples are batched ([`BatchSize`]),
//! ordered ([`Shuffle`]) and shared among ranks, checked together and hashed into the
//! fingerprint that positions carry.

use super::pack::{PackMode, Packing};
use super::position::{Fingerprint, Hasher};
use crate::error::ArgumentError;
use crate::error::Result;

/// How samples are grouped into batches.
///
/// # Example
/// ```
/// use lodtensor::loader::BatchSize;
/// let budget = BatchSize::Tokens(4096);
/// assert_ne!(budget, BatchSize::Samples(4096));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchSize {
    /// A fixed number of samples per batch.
    Samples(usize),
    /// At most this many tokens (summed sample lengths) per batch; a sample longer than
    /// the budget forms a batch of its own, flagged [`BatchInfo::oversize`](super::BatchInfo::oversize).
    Tokens(usize),
}

/// The order samples are visited in within an epoch.
///
/// # Example
/// ```
/// use lodtensor::loader::Shuffle;
/// let windowed = Shuffle::Windowed { seed: 7, rows: 32, window: 256 };
/// assert!(matches!(windowed, Shuffle::Windowed { window: 256, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shuffle {
    /// File order.
    None,
    /// A seeded permutation of all samples, new each epoch.
    Samples {
        /// The seed; the same seed and epoch give the same order everywhere.
        seed: u64,
    },
    /// Runs of up to `rows` consecutive samples (never crossing a record batch of the file)
    /// in a seeded order, each run kept in file order so reads stay contiguous.
    Chunks {
        /// The seed.
        seed: u64,
        /// Samples per run.
        rows: usize,
    },
    /// A global shuffle that still reads contiguously: the shards in a seeded order (a
    /// single file is one shard), within each shard its runs of up to `rows` samples
    /// (never crossing a record batch) in a seeded order, then that stream through a
    /// window of `window` samples out of which a seeded one is taken at each step.
    ///
    /// The bound: the sample at place `i` of the epoch comes from place `i + window - 1`
    /// of the stream at the latest, so a reader that keeps `window` samples in memory reads
    /// every shard's runs front to back, one shard after another.
    Windowed {
        /// The seed.
        seed: u64,
        /// Samples per run.
        rows: usize,
        /// Samples in the window (1: no mixing beyond runs and shards).
        window: usize,
    },
}

/// The attention weight `w` of [`Balance::Attention`] for a causal decoder of width
/// `d = 4096`: per layer, a sequence of `n` tokens costs about `24·d²·n` multiply-adds in
/// its projections and MLP and `2·d·n²` in causal attention, so in tokens' worth of the
/// former a sequence costs `n + n²/(12·d)`: `w = 1/(12·4096) ≈ 2.03e-5`. For another
/// width `d`, give `1/(12·d)`.
///
/// # Example
/// ```
/// use lodtensor::loader::{ATTENTION_WEIGHT, Balance};
/// assert!((ATTENTION_WEIGHT - 2.03e-5).abs() < 1e-7);
/// let cost = Balance::Attention { weight: ATTENTION_WEIGHT }.cost(4096);
/// assert!((cost - (4096.0 + 4096.0 / 12.0)).abs() < 1e-9);   // 4096 tokens: 1/12 more
/// ```
pub const ATTENTION_WEIGHT: f64 = 1.0 / (12.0 * 4096.0);

/// How the ranks' batches of a global step are balanced ([`LoaderBuilder::with_balance`](super::LoaderBuilder::with_balance)):
/// the cost of a sample of `n` tokens is `n + w·n²`, `w` the attention weight (0 for
/// [`Balance::Tokens`]); a packed window costs the sum over its documents' pieces, its
/// padding its length.
///
/// # Example
/// ```
/// use lodtensor::loader::Balance;
/// assert_eq!(Balance::Tokens.cost(300), 300.0);
/// assert_eq!(Balance::Attention { weight: 0.5 }.cost(4), 4.0 + 0.5 * 16.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Balance {
    /// Every token costs the same (`w = 0`).
    Tokens,
    /// A sample of `n` tokens costs `n + weight·n²` ([`ATTENTION_WEIGHT`]: a causal decoder
    /// of width 4096).
    Attention {
        /// `w`: finite, at least 0.
        weight: f64,
    },
}

impl Balance {
    /// `w`: 0 for [`Balance::Tokens`].
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::{ATTENTION_WEIGHT, Balance};
    /// assert_eq!(Balance::Tokens.weight(), 0.0);
    /// assert_eq!(Balance::Attention { weight: ATTENTION_WEIGHT }.weight(), ATTENTION_WEIGHT);
    /// ```
    pub fn weight(self) -> f64 {
        match self {
            Balance::Tokens => 0.0,
            Balance::Attention { weight } => weight,
        }
    }

    /// The cost of a sample (or a window's piece) of `n` tokens: `n + w·n²`.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::Balance;
    /// assert_eq!(Balance::Attention { weight: 0.25 }.cost(8), 8.0 + 16.0);
    /// ```
    pub fn cost(self, n: usize) -> f64 {
        cost(n, self.weight())
    }
}

/// `n + w·n²`.
pub(crate) fn cost(n: usize, w: f64) -> f64 {
    let n = n as f64;
    n + w * n * n
}

/// Global steps dealt from pools of this many steps' worth of samples, by default
/// ([`LoaderBuilder::with_balance_lookahead`](super::LoaderBuilder::with_balance_lookahead)).
pub const BALANCE_LOOKAHEAD: usize = 64;

/// The longest window packing makes: a document's tokens are counted in 32 bits.
const MAX_WINDOW: usize = u32::MAX as usize;

/// Hashed into the options of `shard` with `drop_last`, whose ranks share the epoch's
/// batches rather than its samples.
const DEALT_BATCHES: u64 = 1;

/// Hashed into the options of a loader with balanced global steps.
const BALANCED: u64 = 0x6261_6c61_6e63_6564;

/// Everything that decides a plan besides the lengths and the epoch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PlanConfig {
    pub batch: BatchSize,
    pub drop_last: bool,
    pub shuffle: Shuffle,
    /// Inclusive upper bounds of the length buckets, increasing; longer samples go to a
    /// last bucket. Empty: one bucket.
    pub buckets: Vec<usize>,
    pub ranks: Ranks,
    /// Documents packed into windows; the batch size counts windows.
    pub packing: Option<Packing>,
    /// Balanced global steps, and their pools' size in steps.
    pub balance: Option<Balance>,
    pub balance_lookahead: usize,
}

/// How the ranks of a data-parallel job share each epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ranks {
    /// Rank `rank` of `world` batches its own contiguous, near-equal part of the order; with
    /// `drop_last`, it takes its contiguous, equal share of the batches of the whole order.
    Parts { rank: usize, world: usize },
    /// Every rank makes the batches of the whole order; in each step of `world` batches,
    /// rank `rank` takes batch `step + rank`. A position counts steps of the whole order,
    /// so it means the same on any number of ranks. With `drop_last`, every `group`
    /// consecutive ranks (`world` unless they are the workers of fewer data-parallel ranks)
    /// read a batch each or none.
    Turns {
        rank: usize,
        world: usize,
        group: usize,
    },
}

impl Ranks {
    /// (rank, world size).
    pub fn rank_and_world(self) -> (usize, usize) {
        match self {
            Ranks::Parts { rank, world } | Ranks::Turns { rank, world, .. } => (rank, world),
        }
    }

    /// (this rank's offset in a step, batches per step): (0, 1) unless ranks take turns.
    pub fn turn(self) -> (usize, usize) {
        match self {
            Ranks::Parts { .. } => (0, 1),
            Ranks::Turns { rank, world, .. } => (rank, world),
        }
    }

    /// With `drop_last`, where this rank's part of a step starting at batch 0 ends: the
    /// end of its group's batches (ranks `k·group ..< (k + 1)·group`), which are read
    /// only when the plan has them all. `1` unless ranks take turns.
    pub fn group_end(self) -> usize {
        match self {
            Ranks::Parts { .. } => 1,
            Ranks::Turns { rank, group, .. } => (rank / group + 1) * group,
        }
    }
}

impl PlanConfig {
    /// Checks the options, naming the one that is wrong by the name Rust and Python share
    /// (`batch_size`, `token_budget`, `chunk_rows`, `window`, `rank`, `world_size`,
    /// `buckets`), with the value found.
    pub fn validate(&self) -> Result<()> {
        let bad = |option: &'static str, reason: String| {
            Err(ArgumentError::LoaderConfig { option, reason }.into())
        };
        let at_least_one = |option: &'static str| bad(option, "must be at least 1, got 0".into());
        match self.batch {
            BatchSize::Samples(0) => return at_least_one("batch_size"),
            BatchSize::Tokens(0) => return at_least_one("token_budget"),
            _ => {}
        }
        match self.shuffle {
            Shuffle::Chunks { rows: 0, .. } | Shuffle::Windowed { rows: 0, .. } => {
                return at_least_one("chunk_rows");
            }
            Shuffle::Windowed { window: 0, .. } => return at_least_one("window"),
            _ => {}
        }
        let (rank, world) = self.ranks.rank_and_world();
        if world == 0 {
            return at_least_one("world_size");
        }
        if rank >= world {
            return bad(
                "rank",
                format!("must be below world_size ({world}), got {rank}"),
            );
        }
        if let Ranks::Turns { group, .. } = self.ranks
            && (group == 0 || world % group != 0)
        {
            return bad(
                "step_ranks",
                format!("must divide world_size ({world}), got {group}"),
            );
        }
        if let Some(packing) = &self.packing {
            self.validate_packing(packing)?;
        }
        if let Some(balance) = self.balance {
            self.validate_balance(balance)?;
        }
        if let Some(i) = self.buckets.windows(2).position(|w| w[1] <= w[0]) {
            let (a, b) = (self.buckets[i], self.buckets[i + 1]);
            return bad(
                "buckets",
                format!("bounds must increase: {b} at index {} follows {a}", i + 1),
            );
        }
        Ok(())
    }

    /// Packing: windows of at least one token, batched by number (`batch_size`), in one
    /// bucket.
    fn validate_packing(&self, packing: &Packing) -> Result<()> {
        let bad = |option: &'static str, reason: &str| {
            Err(ArgumentError::LoaderConfig {
                option,
                reason: reason.to_owned(),
            }
            .into())
        };
        if packing.seq_len() == 0 {
            return bad("pack", "must be at least 1 token, got 0");
        }
        if packing.window_len() > MAX_WINDOW {
            let reason = format!(
                "at most {MAX_WINDOW} tokens a window, got {}",
                packing.seq_len()
            );
            return Err(ArgumentError::LoaderConfig {
                option: "pack",
                reason,
            }
            .into());
        }
        if let PackMode::BestFit { lookahead: 0, .. } = packing.mode() {
            return bad("pack_lookahead", "must be at least 1, got 0");
        }
        if let BatchSize::Tokens(_) = self.batch {
            return bad(
                "token_budget",
                "conflicts with pack: a packed batch holds batch_size windows",
            );
        }
        if !self.buckets.is_empty() {
            return bad(
                "buckets",
                "conflicts with pack: every window has one length",
            );
        }
        Ok(())
    }

    /// Balance: a finite weight of at least 0, a look-ahead of at least one step, no
    /// buckets.
    fn validate_balance(&self, balance: Balance) -> Result<()> {
        let bad = |option: &'static str, reason: String| {
            Err(ArgumentError::LoaderConfig { option, reason }.into())
        };
        let w = balance.weight();
        if !(w.is_finite() && w >= 0.0) {
            return bad(
                "attention_weight",
                format!("must be finite and at least 0, got {w}"),
            );
        }
        if self.balance_lookahead == 0 {
            return bad("balance_lookahead", "must be at least 1, got 0".into());
        }
        if !self.buckets.is_empty() {
            return bad(
                "buckets",
                "conflicts with balance: a balanced step sorts its samples by cost".into(),
            );
        }
        Ok(())
    }

    /// The attention weight costs are counted with: the balance's, 0 without one.
    pub fn weight(&self) -> f64 {
        self.balance.map_or(0.0, Balance::weight)
    }

    /// With balance or a schedule (`scheduled`), ranks take turns in global steps of
    /// `world` batches whichever way they were sharded: `shard` ranks become turns.
    pub fn with_turns(mut self, scheduled: bool) -> Self {
        let steps = self.balance.is_some() || scheduled;
        if let (true, Ranks::Parts { rank, world }) = (steps, self.ranks) {
            self.ranks = Ranks::Turns {
                rank,
                world,
                group: world,
            };
        }
        self
    }

    /// These options as every rank of ranks taking turns has them (their plans are the
    /// same): rank 0's.
    pub fn of_every_rank(&self) -> PlanConfig {
        let mut config = self.clone();
        if let Ranks::Turns { rank, .. } = &mut config.ranks {
            *rank = 0;
        }
        config
    }

    /// What of these options decides the plan of ranks taking turns: all but the rank, and
    /// without balance the world size and step group too (every rank makes the whole
    /// epoch's batches whatever their number).
    pub fn plan_key(&self) -> PlanConfig {
        let mut config = self.of_every_rank();
        if let (None, Ranks::Turns { world, group, .. }) = (self.balance, &mut config.ranks) {
            (*world, *group) = (1, 1);
        }
        config
    }

    /// A portable hash of the options and the data, stored in every [`super::Position`]
    /// so that a position is only restored into a loader that makes the same plans.
    /// `row_starts` (the record-batch boundaries) and `shard_starts` count only where they
    /// decide the order.
    pub fn fingerprint(
        &self,
        lengths: &[u32],
        row_starts: &[usize],
        shard_starts: &[usize],
    ) -> Fingerprint {
        let mut options = Hasher::new();
        match self.batch {
            BatchSize::Samples(n) => options.add(&[1, n as u64]),
            BatchSize::Tokens(n) => options.add(&[2, n as u64]),
        }
        match self.shuffle {
            Shuffle::None => options.add(&[0]),
            Shuffle::Samples { seed } => options.add(&[1, seed]),
            Shuffle::Chunks { seed, rows } => options.add(&[2, seed, rows as u64]),
            Shuffle::Windowed { seed, rows, window } => {
                options.add(&[3, seed, rows as u64, window as u64])
            }
        }
        match self.ranks {
            Ranks::Parts { rank, world } => {
                options.add(&[1, rank as u64, world as u64]);
                if self.drop_last {
                    // The parts are of the epoch's batches (they were of samples, each rank
                    // keeping the fewest batches any part made): old positions are refused.
                    options.add(&[DEALT_BATCHES]);
                }
            }
            // Not the rank or the world size: positions move between numbers of ranks.
            Ranks::Turns { .. } => options.add(&[2]),
        }
        if let Some(packing) = &self.packing {
            options.add(&packing.hash_words());
        }
        if let Some(balance) = self.balance {
            // A step's composition depends on the world size: positions resume only on
            // as many ranks.
            let world = self.ranks.rank_and_world().1 as u64;
            let lookahead = self.balance_lookahead as u64;
            options.add(&[BALANCED, balance.weight().to_bits(), lookahead, world]);
        }
        options.add(&[self.drop_last as u64, self.buckets.len() as u64]);
        for &b in &self.buckets {
            options.add(&[b as u64]);
        }
        let record_batches = match self.shuffle {
            Shuffle::Chunks { .. } => {
                let mut h = Hasher::new();
                h.add(&[row_starts.len() as u64]);
                for &r in row_starts {
                    h.add(&[r as u64]);
                }
                h.finish()
            }
            Shuffle::Windowed { .. } => {
                let mut h = Hasher::new();
                for starts in [row_starts, shard_starts] {
                    h.add(&[starts.len() as u64]);
                    for &r in starts {
                        h.add(&[r as u64]);
                    }
                }
                h.finish()
            }
            Shuffle::None | Shuffle::Samples { .. } => 0,
        };
        Fingerprint {
            options: options.finish(),
            lengths: lengths_hash(lengths.iter().copied()),
            record_batches,
        }
    }
}

/// The hash of the samples' lengths in a [`Fingerprint`]: their number, then each.
pub(super) fn lengths_hash(lengths: impl ExactSizeIterator<Item = u32>) -> u64 {
    let mut data = Hasher::new();
    data.add(&[lengths.len() as u64]);
    for l in lengths {
        data.add(&[u64::from(l)]);
    }
    data.finish()
}
