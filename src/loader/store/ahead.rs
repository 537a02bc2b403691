//! The rows a loader reading by ranges reads for its coming batches, in rounds. A round
//! reads the rows of several batches of the plan (this rank's) together (their ranges
//! merged across batches, as one batch's are), with the rows between two of them that a
//! batch before [`FAR_BATCHES`] asks for (so that a run of a windowed shuffle, drawn over
//! many batches, is read whole, once), as long as what is held and being read stays
//! within [`AHEAD_BYTES`]. A batch asking for a row nothing holds waits for the rounds
//! reading it, or reads its own round of [`NEAR_BATCHES`] batches (the first batch, or one
//! after a seek). The rounds after it, of [`AHEAD_BATCHES`] batches, are read on threads of
//! their own, up to [`ROUNDS`] at once, while the loader makes and hands out its batches,
//! as the whole-shard cache downloads its coming shards. Each run read is held until the
//! loader is past the last batch asking for one of its rows that a round has looked at (a
//! row two batches ask for, as a document split between packed windows, is read once
//! when they are within [`FAR_BATCHES`] of each other). A windowed shuffle's
//! batches then cost about a request a run of rows (or fewer: neighbouring runs merge)
//! instead of a request a document.
//!
//! ```text
//! batch i ──rows held?──no──▶ wait for the rounds read ahead ──still not?──▶ read round i now
//!    │                                                                          │
//!    ▼                                                                          ▼
//! rounds after: up to ROUNDS being read, each on a thread ◀─────────────── runs held
//! ```
//!
//! A process forked while rounds are being read (a DataLoader worker) has their handles
//! but not their threads: it forgets them (never joins or drops them) and reads what it
//! needs itself, as `Loader::prefetch`'s callers do.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet, VecDeque};
use std::iter::StepBy;
use std::ops::Range;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::loader::take_ranges::Runs;

/// The batches of the plan whose rows a batch's own round reads: it and those after.
const NEAR_BATCHES: usize = 16;
/// The batches of the plan whose rows a round read ahead reads: fewer, larger requests
/// than a batch's own round, which the first batch waits for.
const AHEAD_BATCHES: usize = 64;
/// The batches whose rows fill the gaps between those a round reads.
const FAR_BATCHES: usize = 256;
/// The most bytes held and being read (at the dataset's mean bytes a row); past it, rounds
/// are read ahead no more and gaps are not filled.
const AHEAD_BYTES: u64 = 64 << 20;
/// The most rounds read ahead at once.
const ROUNDS: usize = 2;

/// A row of a batch: (shard, row of the shard, batch of the plan).
pub(super) type Asked = (usize, usize, usize);

/// Reads rows `(shard, row)` (sorted, once each) by ranges, on any thread: each shard's
/// runs, none for a shard to be mapped instead.
pub(super) type Read = Arc<dyn Fn(&[(usize, usize)]) -> Result<HashMap<usize, Runs>> + Send + Sync>;

/// A run of rows read: its rows in the shard, its data, and the last batch asking for one.
type Held = (Range<usize>, Dataset, usize);

/// The loader's side of a read-ahead: its plan and the shards at hand.
pub(super) trait Coming {
    /// The number of batches of the plan.
    fn batches(&self) -> usize;

    /// Every row of the plan's batches `batches` (those past the last left out).
    ///
    /// # Errors
    /// A row of the plan that is not a row of the dataset.
    fn rows(&self, batches: StepBy<Range<usize>>) -> Result<Vec<Asked>>;

    /// Whether shard `shard` is at hand (mapped, never read by ranges).
    fn at_hand(&self, shard: usize) -> bool;
}

/// A round being read on a thread of its own.
#[derive(Debug)]
struct Round {
    /// The rows it reads, sorted by shard and row, each with the last batch asking for it.
    wanted: Vec<Asked>,
    thread: JoinHandle<Result<HashMap<usize, Runs>>>,
    /// The process that started the thread.
    pid: u32,
}

impl Round {
    /// The place in `wanted` of row `row` of shard `shard`, if the round reads it.
    fn place_of(&self, shard: usize, row: usize) -> Option<usize> {
        let at = (self.wanted).partition_point(|&(s, r, _)| (s, r) < (shard, row));
        let read = (self.wanted.get(at)).is_some_and(|&(s, r, _)| (s, r) == (shard, row));
        read.then_some(at)
    }
}

/// Rows read ahead, by shard, and the rounds being read.
#[derive(Debug)]
pub(super) struct ReadAhead {
    /// The runs held of each shard, in row order.
    held: HashMap<usize, Vec<Held>>,
    /// Shards a read returned no runs for (of a type not cut by rows): mapped whole, never
    /// read by ranges again.
    mapped: HashSet<usize>,
    /// The dataset's mean bytes a row, for [`AHEAD_BYTES`].
    row_bytes: u64,
    /// The rounds being read, in the plan's order.
    reading: VecDeque<Round>,
    /// The batch the next round read ahead starts at: the rows of those before it (from the
    /// last round read by a batch on) are held or being read.
    next: usize,
    /// The plan's batches from one of this rank's to its next (1 unless ranks take turns).
    step: usize,
}

impl ReadAhead {
    /// Nothing held yet, over a dataset of `row_bytes` a row on average, for a rank reading
    /// every `step`-th batch of its plans.
    pub(super) fn new(row_bytes: u64, step: usize) -> Self {
        ReadAhead {
            held: HashMap::new(),
            mapped: HashSet::new(),
            row_bytes: row_bytes.max(1),
            reading: VecDeque::new(),
            next: 0,
            step: step.max(1),
        }
    }

    /// Reads for a rank reading every `step`-th batch of its plans from now on.
    pub(super) fn set_step(&mut self, step: usize) {
        self.step = step.max(1);
    }

    /// The epoch is over: nothing is held for it any more (rounds being read are left to
    /// end on their own).
    pub(super) fn end_epoch(&mut self) {
        *self = ReadAhead::new(self.row_bytes, self.step);
    }

    /// The runs to take batch `index`'s rows `located` (shard, row) from: held ones, or
    /// those of the rounds being read (waited for), or read now by `read` with the rows of
    /// the coming batches of `plan`. Then starts reading the next rounds. A shard has runs
    /// in the answer when every row of it asked is held; the others are at hand (or must
    /// be mapped).
    ///
    /// # Errors
    /// `plan`'s and `read`'s (a round's read on a thread passed on to the batch waiting
    /// for it); [`ErrorKind::Internal`](crate::error::ErrorKind::Internal) if a round's
    /// thread panicked.
    pub(super) fn runs_for(
        &mut self,
        index: usize,
        located: &[(usize, usize)],
        plan: &dyn Coming,
        read: &Read,
    ) -> Result<HashMap<usize, Runs>> {
        self.forget_if_forked();
        for runs in self.held.values_mut() {
            runs.retain(|(.., until)| *until >= index);
        }
        let mut asked = located.to_vec();
        asked.sort_unstable();
        asked.dedup();
        while self.missing(&asked, plan) {
            match self.reading.pop_front() {
                Some(round) => self.collect(round)?,
                None => {
                    let wanted = self.round(index, plan, false)?.unwrap_or_default();
                    self.next = index + NEAR_BATCHES * self.step;
                    let rows: Vec<(usize, usize)> =
                        wanted.iter().map(|&(s, r, _)| (s, r)).collect();
                    let runs = read(&rows)?;
                    self.hold(runs, &wanted);
                    break;
                }
            }
        }
        while self.reading.front().is_some_and(|r| r.thread.is_finished()) {
            let round = self.reading.pop_front().expect("a front");
            self.collect(round)?;
        }
        self.read_ahead(index, plan, read)?;
        Ok((asked.chunk_by(|a, b| a.0 == b.0))
            .filter_map(|rows| Some((rows[0].0, self.runs_holding(rows)?)))
            .collect())
    }

    /// Whether a row of `asked` (sorted) of a shard read by ranges is not held.
    fn missing(&self, asked: &[(usize, usize)], plan: &dyn Coming) -> bool {
        (asked.chunk_by(|a, b| a.0 == b.0))
            .filter(|rows| self.far(rows[0].0, plan))
            .any(|rows| rows.iter().any(|&(s, r)| !self.holds(s, r)))
    }

    /// Whether shard `shard`'s rows are read by ranges.
    fn far(&self, shard: usize, plan: &dyn Coming) -> bool {
        !self.mapped.contains(&shard) && !plan.at_hand(shard)
    }

    /// Starts reading the rounds after batch `index` on threads, while fewer than
    /// [`ROUNDS`] are being read and what they read fits in [`AHEAD_BYTES`] with what is
    /// held.
    fn read_ahead(&mut self, index: usize, plan: &dyn Coming, read: &Read) -> Result<()> {
        let (mut from, span) = (self.next.max(index + self.step), AHEAD_BATCHES * self.step);
        while self.reading.len() < ROUNDS && from < plan.batches() {
            let asked = plan.rows((from..from + span).step_by(self.step))?;
            self.keep_asked(&asked);
            // The round starts at the first batch with a row to read, as a batch's own does.
            let Some(first) = self.first_unread(asked, plan) else {
                (from, self.next) = (from + span, from + span);
                continue;
            };
            let Some(wanted) = self.round(first, plan, true)? else {
                break;
            };
            (from, self.next) = (first + span, first + span);
            let rows: Vec<(usize, usize)> = wanted.iter().map(|&(s, r, _)| (s, r)).collect();
            let read = Arc::clone(read);
            let thread = std::thread::Builder::new()
                .name("lodtensor-read-ahead".into())
                .spawn(move || read(&rows));
            // Without a thread, the rows are read by the batch asking for them.
            let Ok(thread) = thread else { break };
            let pid = std::process::id();
            self.reading.push_back(Round {
                wanted,
                thread,
                pid,
            });
        }
        Ok(())
    }

    /// The rows of the round starting at batch `from` (of [`AHEAD_BATCHES`] batches if
    /// `ahead`, else [`NEAR_BATCHES`]): those of its batches and, while they fit, the gaps
    /// between them, that are neither held nor being read, sorted, each with the last
    /// batch asking for it. `None` when `ahead` and the round's own rows do not fit in
    /// [`AHEAD_BYTES`] with what is held and being read. A row a later batch asks for again
    /// is kept until then, whether it is read now, held or being read.
    fn round(&mut self, from: usize, plan: &dyn Coming, ahead: bool) -> Result<Option<Vec<Asked>>> {
        let step = self.step;
        let batches = |from: usize, to: usize| (from..to).step_by(step);
        let count = if ahead { AHEAD_BATCHES } else { NEAR_BATCHES };
        let (near_end, later_end) = (from + count * step, from + FAR_BATCHES * step);
        let (near, later) = (
            plan.rows(batches(from, near_end))?,
            plan.rows(batches(near_end, later_end))?,
        );
        self.keep_asked(&near);
        self.keep_asked(&later);
        let (near, later) = (self.unread(near, plan), self.unread(later, plan));
        let near = until_asked_again(near, &later);
        let held: usize = (self.held.values().flatten())
            .map(|(rows, ..)| rows.len())
            .sum();
        let reading: usize = self.reading.iter().map(|r| r.wanted.len()).sum();
        let (used, room) = (held + reading, (AHEAD_BYTES / self.row_bytes) as usize);
        if ahead && used + near.len() > room {
            return Ok(None);
        }
        let filled = with_gaps_filled(near.clone(), &later);
        Ok(Some(match used + filled.len() <= room {
            true => filled,
            false => near,
        }))
    }

    /// `rows` sorted and once each (at its last batch), of shards read by ranges (asked
    /// once a shard), neither held nor being read.
    fn unread(&self, mut rows: Vec<Asked>, plan: &dyn Coming) -> Vec<Asked> {
        rows.sort_unstable_by_key(|&(s, r, b)| (s, r, Reverse(b)));
        rows.dedup_by_key(|&mut (s, r, _)| (s, r));
        let of_far = rows
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|c| self.far(c[0].0, plan));
        let unheld = of_far.flatten().filter(|&&(s, r, _)| self.unread_row(s, r));
        unheld.copied().collect()
    }

    /// The first batch of `asked` (rows of some batches) asking for a row to read (neither
    /// held nor being read), if one does.
    fn first_unread(&self, mut asked: Vec<Asked>, plan: &dyn Coming) -> Option<usize> {
        asked.sort_unstable();
        let of_far = asked
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|c| self.far(c[0].0, plan));
        let unread = of_far.flatten().filter(|&&(s, r, _)| self.unread_row(s, r));
        unread.map(|&(.., b)| b).min()
    }

    /// Keeps each row of `asked` that is held or being read until its batch there, at
    /// least: a row asked by more than one batch (a document split between packed windows)
    /// is not dropped before the last one takes it.
    fn keep_asked(&mut self, asked: &[Asked]) {
        for &(shard, row, batch) in asked {
            if let Some(i) = self.run_of(shard, row) {
                let run = self.held.get_mut(&shard).map(|runs| &mut runs[i]);
                if let Some((.., until)) = run {
                    *until = (*until).max(batch);
                }
                continue;
            }
            for round in &mut self.reading {
                if let Some(i) = round.place_of(shard, row) {
                    round.wanted[i].2 = round.wanted[i].2.max(batch);
                }
            }
        }
    }

    /// Whether row `row` of shard `shard` (read by ranges) is neither held nor being read.
    fn unread_row(&self, shard: usize, row: usize) -> bool {
        let being_read = |round: &Round| round.place_of(shard, row).is_some();
        !self.holds(shard, row) && !self.reading.iter().any(being_read)
    }

    /// Waits for `round` and holds its runs.
    fn collect(&mut self, round: Round) -> Result<()> {
        let read = (round.thread.join())
            .map_err(|_| Error::internal("a thread reading rows ahead panicked"))?;
        self.hold(read?, &round.wanted);
        Ok(())
    }

    /// In a child forked while rounds were being read: forgets them, neither joined nor
    /// dropped (their threads are not in this process; a lock one held would never be
    /// released). Their rows are read again when asked for.
    fn forget_if_forked(&mut self) {
        if (self.reading.iter()).any(|r| r.pid != std::process::id()) {
            std::mem::forget(std::mem::take(&mut self.reading));
            self.next = 0;
        }
    }

    /// Holds the runs `read` of the rows `wanted`, each until the last batch asking for one
    /// of its rows; a shard of `wanted` without runs is mapped from now on.
    fn hold(&mut self, mut read: HashMap<usize, Runs>, wanted: &[Asked]) {
        for rows in wanted.chunk_by(|a, b| a.0 == b.0) {
            let shard = rows[0].0;
            let Some(runs) = read.remove(&shard) else {
                self.mapped.insert(shard);
                continue;
            };
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

impl Drop for ReadAhead {
    /// Rounds being read are left to end on their own (their results dropped), and in a
    /// forked child forgotten.
    fn drop(&mut self) {
        self.forget_if_forked();
    }
}

/// `rows` (sorted by shard and row, once each), each with the last batch asking for it in
/// `rows` or in `later` (the same).
fn until_asked_again(mut rows: Vec<Asked>, later: &[Asked]) -> Vec<Asked> {
    for (shard, row, until) in &mut rows {
        let at = later.partition_point(|&(s, r, _)| (s, r) < (*shard, *row));
        if let Some(&(s, r, batch)) = later.get(at)
            && (s, r) == (*shard, *row)
        {
            *until = (*until).max(batch);
        }
    }
    rows
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
mod tests;
