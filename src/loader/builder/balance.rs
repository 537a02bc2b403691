//! The options of balanced global steps ([`LoaderBuilder::with_balance`]).

use super::LoaderBuilder;
#[cfg(doc)]
use crate::loader::config::BALANCE_LOOKAHEAD;
use crate::loader::config::Balance;

impl LoaderBuilder<'_> {
    /// Balanced global steps: the epoch's batches are made as steps of `world_size`
    /// batches, one per rank (rank `r` reads batch `step·world_size + r`, whether sharded
    /// with [`LoaderBuilder::shard`] or [`LoaderBuilder::elastic_shard`]), each step's
    /// samples (or packed windows) dealt to its ranks so that their costs
    /// ([`Balance`]) are close: every sample once per epoch, the plan the same on every
    /// rank. The epoch's order is taken in pools of [`LoaderBuilder::with_balance_lookahead`]
    /// steps' worth of samples; within a pool, samples are sorted by cost and each step
    /// takes the next ones, dealt largest first to the rank with the least cost (with a
    /// token budget: the least cost with room; samples over the budget get steps of their
    /// own); the pool's steps are then shuffled with the epoch's seed when the loader
    /// shuffles. Positions resume only on as many ranks (the fingerprint holds the world
    /// size). Not with buckets. `docs/design.md` ("Balanced global steps") has the bounds.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Balance, Loader};
    /// // Samples of 1..=5 tokens (sample s has s + 1), 2 ranks, budget 6: steps of two batches.
    /// let rank = |r| Loader::builder(&file).with_token_budget(6).with_balance(Balance::Tokens).shard(r, 2).build();
    /// let plan = rank(0)?.plan(0);
    /// assert_eq!(plan, rank(1)?.plan(0));                        // one plan, every rank
    /// // Largest first, each to the cheapest rank with room: 5 | 4, then 2 to 4, 1 to 5.
    /// assert_eq!(plan.batches().collect::<Vec<_>>(), [&[0, 4][..], &[1, 3], &[2]]);
    /// assert_eq!(plan.costs(), [6.0, 6.0, 3.0]);
    /// assert_eq!((rank(0)?.num_batches(0), rank(1)?.num_batches(0)), (2, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_balance(mut self, balance: Balance) -> Self {
        self.config.balance = Some(balance);
        self
    }

    /// The pools of [`LoaderBuilder::with_balance`]: `steps` global steps' worth of samples
    /// (`steps · world_size · batch_size` samples or windows, or samples of `steps ·
    /// world_size · token_budget` tokens); the default [`BALANCE_LOOKAHEAD`]. Larger pools
    /// balance the long tail better and mix the epoch's order more.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Balance, Loader};
    /// let loader = Loader::builder(&file).with_batch_size(1).with_balance(Balance::Tokens);
    /// let plan = loader.with_balance_lookahead(2).build()?.plan(0);
    /// // Pools of 2 samples, sorted: [1, 0], [3, 2], [4].
    /// assert_eq!(plan.batches().collect::<Vec<_>>(), [&[1][..], &[0], &[3], &[2], &[4]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_balance_lookahead(mut self, steps: usize) -> Self {
        self.config.balance_lookahead = steps;
        self
    }
}
