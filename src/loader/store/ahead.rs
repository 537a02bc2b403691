//! The rows a loader reading by ranges has read for its coming batches: when a batch asks
//! for a row of a shard not at hand that nothing holds, the rows of that batch and of the
//! next [`NEAR_BATCHES`] − 1 of the plan are read together (their ranges merged across
//! batches, as one batch's are), with the rows between two of them that a batch before
//! [`FAR_BATCHES`] asks for (so that a run of a windowed shuffle, drawn over many batches,
//! is read whole, once), as long as what is held stays within [`AHEAD_BYTES`]. Each run
//! read is held until the loader is past the last batch that asks for one of its rows. A
//! windowed shuffle's batches then cost about a request a run of rows (or fewer:
//! neighbouring runs merge) instead of a request a document.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::loader::take_ranges::Runs;
use crate::shards::ShardFiles;

/// The batches of the plan whose rows are read together: the current one and those after.
const NEAR_BATCHES: usize = 16;
/// The batches whose rows fill the gaps between those read together.
const FAR_BATCHES: usize = 256;
/// The most bytes held (at the dataset's mean bytes a row) for gaps to be filled.
const AHEAD_BYTES: u64 = 64 << 20;

/// A row of a batch: (shard, row of the shard, batch of the plan).
pub(super) type Asked = (usize, usize, usize);

/// A run of rows read: its rows in the shard, its data, and the last batch asking for one.
type Held = (Range<usize>, Dataset, usize);

/// Rows read ahead, by shard.
#[derive(Debug, Default)]
pub(super) struct ReadAhead {
    /// The runs held of each shard, in row order.
    held: HashMap<usize, Vec<Held>>,
    /// Shards a read returned no runs for (compressed, or of a type not cut by rows):
    /// mapped whole, never read by ranges again.
    mapped: HashSet<usize>,
    /// The dataset's mean bytes a row, for [`AHEAD_BYTES`].
    row_bytes: u64,
}

impl ReadAhead {
    /// Nothing held yet, over a dataset of `row_bytes` a row on average.
    pub(super) fn new(row_bytes: u64) -> Self {
        ReadAhead {
            row_bytes: row_bytes.max(1),
            ..ReadAhead::default()
        }
    }

    /// The runs to take batch `index`'s rows `located` (shard, row) from: held ones, or read
    /// now by `read` with the rows of the coming batches (`coming(batches)`: the rows of
    /// those batches of the plan). A shard has runs in the answer when every row of it
    /// asked is held; the others are at hand (or must be mapped).
    ///
    /// # Errors
    /// `coming`'s and `read`'s.
    pub(super) fn runs_for(
        &mut self,
        index: usize,
        located: &[(usize, usize)],
        files: &ShardFiles,
        coming: impl Fn(Range<usize>) -> Result<Vec<Asked>>,
        read: impl FnOnce(&[(usize, usize)]) -> Result<HashMap<usize, Runs>>,
    ) -> Result<HashMap<usize, Runs>> {
        for runs in self.held.values_mut() {
            runs.retain(|(.., until)| *until >= index);
        }
        let mut asked = located.to_vec();
        asked.sort_unstable();
        asked.dedup();
        let far = |shard: usize| !self.mapped.contains(&shard) && !files.at_hand(shard);
        let missing = (asked.chunk_by(|a, b| a.0 == b.0))
            .filter(|rows| far(rows[0].0))
            .any(|rows| rows.iter().any(|&(s, r)| !self.holds(s, r)));
        if missing {
            // Sorted and once each (at its last batch), of far shards (asked once a shard),
            // not held.
            let unread = |mut rows: Vec<Asked>| {
                rows.sort_unstable_by_key(|&(s, r, b)| (s, r, Reverse(b)));
                rows.dedup_by_key(|&mut (s, r, _)| (s, r));
                let of_far = rows.chunk_by(|a, b| a.0 == b.0).filter(|c| far(c[0].0));
                let unheld = of_far.flatten().filter(|&&(s, r, _)| !self.holds(s, r));
                unheld.copied().collect::<Vec<Asked>>()
            };
            let near = unread(coming(index..index + NEAR_BATCHES)?);
            let later = unread(coming(index + NEAR_BATCHES..index + FAR_BATCHES)?);
            let held: usize = (self.held.values().flatten())
                .map(|(rows, ..)| rows.len())
                .sum();
            let room = (AHEAD_BYTES / self.row_bytes) as usize;
            let wanted = match held + near.len() + later.len() <= room {
                true => with_gaps_filled(near, &later),
                false => near,
            };
            let rows: Vec<(usize, usize)> = wanted.iter().map(|&(s, r, _)| (s, r)).collect();
            let runs = read(&rows)?;
            let shards = rows.chunk_by(|a, b| a.0 == b.0).map(|rows| rows[0].0);
            self.mapped.extend(shards.filter(|s| !runs.contains_key(s)));
            self.hold(runs, &wanted);
        }
        Ok((asked.chunk_by(|a, b| a.0 == b.0))
            .filter_map(|rows| Some((rows[0].0, self.runs_holding(rows)?)))
            .collect())
    }

    /// Holds the runs `read` of the rows `wanted`, each until the last batch asking for one
    /// of its rows.
    fn hold(&mut self, read: HashMap<usize, Runs>, wanted: &[Asked]) {
        for (shard, runs) in read {
            let held = self.held.entry(shard).or_default();
            for (rows, data) in runs {
                let from = wanted.partition_point(|&(s, r, _)| (s, r) < (shard, rows.start));
                let to = wanted.partition_point(|&(s, r, _)| (s, r) < (shard, rows.end));
                let until = wanted[from..to].iter().map(|&(.., b)| b).max();
                held.push((rows, data, until.unwrap_or(0)));
            }
            held.sort_unstable_by_key(|(rows, ..)| rows.start);
        }
    }

    /// The place among shard `shard`'s runs held of the one with row `row`.
    fn run_of(&self, shard: usize, row: usize) -> Option<usize> {
        let runs = self.held.get(&shard)?;
        let i = runs
            .partition_point(|(rows, ..)| rows.start <= row)
            .checked_sub(1)?;
        runs[i].0.contains(&row).then_some(i)
    }

    /// Whether a run held has row `row` of shard `shard`.
    fn holds(&self, shard: usize, row: usize) -> bool {
        self.run_of(shard, row).is_some()
    }

    /// The runs held with the rows `rows` (of one shard, sorted), in row order; `None`
    /// unless every one is held.
    fn runs_holding(&self, rows: &[(usize, usize)]) -> Option<Runs> {
        let mut places = (rows.iter())
            .map(|&(s, r)| self.run_of(s, r))
            .collect::<Option<Vec<usize>>>()?;
        places.dedup();
        let runs = self.held.get(&rows.first()?.0)?;
        Some(
            (places.iter())
                .map(|&i| (runs[i].0.clone(), runs[i].1.clone()))
                .collect(),
        )
    }
}

/// `near` (sorted by shard and row, once each) with the rows of `later` (the same) that lie
/// between two rows of `near` of a shard: read now, they cost no request of their own.
fn with_gaps_filled(near: Vec<Asked>, later: &[Asked]) -> Vec<Asked> {
    let mut out = Vec::with_capacity(near.len());
    for pair in near.windows(2) {
        let ((s, a, _), (t, b, _)) = (pair[0], pair[1]);
        out.push(pair[0]);
        if s == t {
            let from = later.partition_point(|&(ls, lr, _)| (ls, lr) <= (s, a));
            let to = later.partition_point(|&(ls, lr, _)| (ls, lr) < (s, b));
            out.extend_from_slice(&later[from..to]);
        }
    }
    out.extend(near.last());
    out
}

#[cfg(test)]
mod tests {
    use super::with_gaps_filled;

    #[test]
    fn the_later_rows_between_two_rows_of_a_shard_read_now_are_read_with_them() {
        // Shard 0: rows 2 and 6 now, 3, 4, 5 later (all between); 6 and 9 now, 8 later (7
        // never); 12 later, past the last row now. Shard 1: 0 and 2 now; 1 later, but of
        // shard 2.
        let near = vec![(0, 2, 0), (0, 6, 1), (0, 9, 0), (1, 0, 2), (1, 2, 3)];
        let later = [
            (0, 3, 20),
            (0, 4, 17),
            (0, 5, 30),
            (0, 8, 19),
            (0, 12, 18),
            (2, 1, 18),
        ];
        let filled = with_gaps_filled(near, &later);
        let rows: Vec<(usize, usize)> = filled.iter().map(|&(s, r, _)| (s, r)).collect();
        let expected = [
            (0, 2),
            (0, 3),
            (0, 4),
            (0, 5),
            (0, 6),
            (0, 8),
            (0, 9),
            (1, 0),
            (1, 2),
        ];
        assert_eq!(rows, expected);
        assert_eq!(filled.iter().map(|&(.., b)| b).max(), Some(30));
        assert!(with_gaps_filled(Vec::new(), &later).is_empty());
    }
}
