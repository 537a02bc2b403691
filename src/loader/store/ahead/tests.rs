//! The read-ahead over a plan made by hand, its reads counted: what each round reads,
//! when it is started, and the rows each batch is given.

use std::collections::HashMap;
use std::iter::StepBy;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use arrow_array::types::Int32Type;
use proptest::prelude::*;

use super::{
    AHEAD_BATCHES, AHEAD_BYTES, Asked, Coming, NEAR_BATCHES, ROUNDS, Read, ReadAhead,
    with_gaps_filled,
};
use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::tensor::LodTensor;

/// A plan of `batches` batches of 2 rows of shard 0: batch `b` asks rows `2b` and `2b + 1`.
struct Pairs {
    batches: usize,
}

impl Coming for Pairs {
    fn batches(&self) -> usize {
        self.batches
    }

    fn rows(&self, batches: StepBy<Range<usize>>) -> Result<Vec<Asked>> {
        let real = batches.take_while(|&b| b < self.batches);
        Ok(real
            .flat_map(|b| [(0, 2 * b, b), (0, 2 * b + 1, b)])
            .collect())
    }

    fn at_hand(&self, _shard: usize) -> bool {
        false
    }
}

/// The rows batch `b` of [`Pairs`] asks for.
fn pair(b: usize) -> [(usize, usize); 2] {
    [(0, 2 * b), (0, 2 * b + 1)]
}

/// A read of runs of rows whose values are their row numbers, each read's rows sent to the
/// receiver returned; on a thread reading ahead in this process, it waits for `open` first.
fn counted(open: Arc<AtomicBool>) -> (Read, Receiver<Vec<(usize, usize)>>) {
    let (sender, receiver) = channel();
    let pid = std::process::id();
    let read: Read = Arc::new(move |rows: &[(usize, usize)]| {
        let ahead = std::thread::current().name() == Some("lodtensor-read-ahead");
        while ahead && std::process::id() == pid && !open.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut runs: HashMap<usize, super::Runs> = HashMap::new();
        for run in rows.chunk_by(|a, b| a.0 == b.0 && a.1 + 1 == b.1) {
            let (shard, first) = run[0];
            let values: Vec<i32> = (first..first + run.len()).map(|r| r as i32).collect();
            let tensor =
                LodTensor::from_lengths::<Int32Type>(&[vec![1; run.len()]], values, vec![])?;
            let data = Dataset::try_new(vec![Column::new("row", tensor)])?;
            runs.entry(shard)
                .or_default()
                .push((first..first + run.len(), data));
        }
        let _ = sender.send(rows.to_vec());
        Ok(runs)
    });
    (read, receiver)
}

/// Whether `runs` hold the rows `rows` of shard 0, each with its own number as value.
fn holds_rows(runs: &HashMap<usize, super::Runs>, rows: &[(usize, usize)]) -> bool {
    rows.iter().all(|&(_, row)| {
        runs[&0].iter().any(|(range, data)| {
            let values = data
                .column("row")
                .and_then(|t| t.typed_values::<Int32Type>());
            range.contains(&row) && values.is_ok_and(|v| v[row - range.start] == row as i32)
        })
    })
}

/// The rows held and being read.
fn used(ahead: &ReadAhead) -> usize {
    let held: usize = ahead.held.values().flatten().map(|(r, ..)| r.len()).sum();
    held + ahead.reading.iter().map(|r| r.wanted.len()).sum::<usize>()
}

#[test]
fn the_next_rounds_are_read_on_threads_while_the_current_one_s_batches_are_taken() {
    let (near, far) = (NEAR_BATCHES, NEAR_BATCHES + ROUNDS * AHEAD_BATCHES);
    let plan = Pairs { batches: far + 10 };
    let (read, reads) = counted(Arc::new(AtomicBool::new(true)));
    let mut ahead = ReadAhead::new(1, 1);
    let runs = ahead.runs_for(0, &pair(0), &plan, &read).unwrap();
    assert!(holds_rows(&runs, &pair(0)));
    // Batch 0 read its round (batches 0–15) itself, and started the rounds after it
    // (16–79, 80–143) before any other batch was taken.
    let wait = Duration::from_secs(60); // a guard against a hang, not a timing
    let mut rounds: Vec<Vec<(usize, usize)>> = (0..ROUNDS + 1)
        .map(|_| reads.recv_timeout(wait).unwrap())
        .collect();
    rounds.sort();
    let of = |batches: Range<usize>| batches.flat_map(pair).collect::<Vec<_>>();
    let mut expected = vec![of(0..near)];
    for k in 0..ROUNDS {
        expected.push(of(near + k * AHEAD_BATCHES..near + (k + 1) * AHEAD_BATCHES));
    }
    assert_eq!(rounds, expected);
    for b in 1..plan.batches {
        let runs = ahead.runs_for(b, &pair(b), &plan, &read).unwrap();
        assert!(holds_rows(&runs, &pair(b)), "batch {b}");
        assert!(ahead.reading.len() <= ROUNDS);
    }
    // The last 10 batches in one more round; every row read once.
    assert_eq!(reads.try_iter().collect::<Vec<_>>(), [of(far..far + 10)]);
}

#[test]
fn a_rank_taking_turns_reads_ahead_the_rows_of_its_own_batches_alone() {
    // Rank 1 of 2 taking turns: batches 1, 3, 5, …; batch b's rows are 2b and 2b + 1.
    let plan = Pairs { batches: 100 };
    let (read, reads) = counted(Arc::new(AtomicBool::new(true)));
    let mut ahead = ReadAhead::new(1, 2);
    for b in (1..100).step_by(2) {
        let runs = ahead.runs_for(b, &pair(b), &plan, &read).unwrap();
        assert!(holds_rows(&runs, &pair(b)), "batch {b}");
    }
    let mut read_rows: Vec<usize> = reads.try_iter().flatten().map(|(_, r)| r).collect();
    read_rows.sort_unstable();
    let own: Vec<usize> = (1..100).step_by(2).flat_map(pair).map(|(_, r)| r).collect();
    assert_eq!(read_rows, own);
}

#[test]
fn rounds_are_read_ahead_only_within_the_bytes_held() {
    // Room for 40 rows: a batch's own round is 32 rows, one read ahead 128: none is.
    let plan = Pairs { batches: 64 };
    let (read, reads) = counted(Arc::new(AtomicBool::new(true)));
    let mut ahead = ReadAhead::new(AHEAD_BYTES / 40, 1);
    for b in 0..64 {
        let runs = ahead.runs_for(b, &pair(b), &plan, &read).unwrap();
        assert!(holds_rows(&runs, &pair(b)), "batch {b}");
        assert!(
            ahead.reading.is_empty() || used(&ahead) <= 40,
            "batch {b}: {}",
            used(&ahead)
        );
    }
    assert_eq!(reads.try_iter().count(), 64 / NEAR_BATCHES);
}

#[cfg(target_os = "linux")]
#[test]
fn a_child_forked_while_rounds_are_read_reads_its_rows_itself() {
    let plan = Pairs { batches: 200 };
    let open = Arc::new(AtomicBool::new(true));
    let (read, _reads) = counted(Arc::clone(&open));
    // The parent's rounds read ahead wait; a child forked meanwhile has none of their
    // threads, forgets them and reads batch 16's round itself.
    open.store(false, Ordering::Release);
    let mut ahead = ReadAhead::new(1, 1);
    ahead.runs_for(0, &pair(0), &plan, &read).unwrap();
    assert_eq!(ahead.reading.len(), ROUNDS);
    let child = crate::loader::tests::in_child(|| {
        let runs = ahead.runs_for(16, &pair(16), &plan, &read);
        runs.is_ok_and(|r| holds_rows(&r, &pair(16)))
    });
    assert!(child, "the forked child's checks failed");
    open.store(true, Ordering::Release);
    for b in 1..200 {
        let runs = ahead.runs_for(b, &pair(b), &plan, &read).unwrap();
        assert!(holds_rows(&runs, &pair(b)), "batch {b}");
    }
}

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

/// [`Pairs`] whose batch `b` asks again for the first row of batch `b - again` (from batch
/// `again` on): a row asked by two batches, as a document split between packed windows.
struct PairsAgain {
    batches: usize,
    again: usize,
}

impl Coming for PairsAgain {
    fn batches(&self) -> usize {
        self.batches
    }

    fn rows(&self, batches: StepBy<Range<usize>>) -> Result<Vec<Asked>> {
        let mut rows = Vec::new();
        for b in batches.take_while(|&b| b < self.batches) {
            rows.extend(pair(b).map(|(s, r)| (s, r, b)));
            if let Some(before) = b.checked_sub(self.again) {
                rows.push((0, 2 * before, b));
            }
        }
        Ok(rows)
    }

    fn at_hand(&self, _shard: usize) -> bool {
        false
    }
}

#[test]
fn a_row_two_batches_ask_for_is_held_until_the_second_and_read_once() {
    for again in [
        1,
        3,
        NEAR_BATCHES + 1,
        AHEAD_BATCHES + 5,
        2 * AHEAD_BATCHES + 7,
    ] {
        let plan = PairsAgain {
            batches: 600,
            again,
        };
        let (read, reads) = counted(Arc::new(AtomicBool::new(true)));
        let mut ahead = ReadAhead::new(1, 1);
        for b in 0..plan.batches {
            let mut asked: Vec<(usize, usize)> = pair(b).to_vec();
            asked.extend(b.checked_sub(again).map(|before| (0, 2 * before)));
            let runs = ahead.runs_for(b, &asked, &plan, &read).unwrap();
            assert!(holds_rows(&runs, &asked), "again {again}, batch {b}");
        }
        let mut read_rows: Vec<usize> = reads.try_iter().flatten().map(|(_, r)| r).collect();
        read_rows.sort_unstable();
        assert_eq!(
            read_rows,
            (0..2 * plan.batches).collect::<Vec<_>>(),
            "again {again}"
        );
    }
}

/// A plan given batch by batch: batch `b` asks for rows `batches[b]` of shard 0 (a row may
/// be asked by several batches).
struct Listed {
    batches: Vec<Vec<usize>>,
}

impl Coming for Listed {
    fn batches(&self) -> usize {
        self.batches.len()
    }

    fn rows(&self, batches: StepBy<Range<usize>>) -> Result<Vec<Asked>> {
        let real = batches.take_while(|&b| b < self.batches.len());
        Ok(real
            .flat_map(|b| self.batches[b].iter().map(move |&r| (0, r, b)))
            .collect())
    }

    fn at_hand(&self, _shard: usize) -> bool {
        false
    }
}

proptest! {
    #[test]
    fn every_batch_gets_its_rows_and_a_plan_within_reach_reads_each_row_once(
        batches in proptest::collection::vec(proptest::collection::vec(0usize..300, 0..12), 1..200),
        step in 1usize..3,
        room in prop_oneof![Just(8usize), Just(64), Just(usize::MAX)],
    ) {
        let plan = Listed { batches };
        let (read, reads) = counted(Arc::new(AtomicBool::new(true)));
        let row_bytes = match room {
            usize::MAX => 1,
            rows => AHEAD_BYTES / rows as u64,
        };
        let mut ahead = ReadAhead::new(row_bytes, step);
        let mut asked_rows = std::collections::BTreeSet::new();
        for b in (step - 1..plan.batches.len()).step_by(step) {
            let asked: Vec<(usize, usize)> = plan.batches[b].iter().map(|&r| (0, r)).collect();
            asked_rows.extend(plan.batches[b].iter().copied());
            let runs = ahead.runs_for(b, &asked, &plan, &read).unwrap();
            prop_assert!(asked.is_empty() || holds_rows(&runs, &asked), "batch {}", b);
        }
        // Room for every row, and every batch within the rounds' reach of the first: each
        // row asked is read once, however many batches ask for it.
        if room == usize::MAX {
            let mut read_rows: Vec<usize> = reads.try_iter().flatten().map(|(_, r)| r).collect();
            read_rows.sort_unstable();
            prop_assert_eq!(read_rows, asked_rows.into_iter().collect::<Vec<_>>());
        }
    }
}
