//! Sequence packing for language-model pretraining: an epoch's documents into windows of a
//! fixed number of tokens, with the document boundaries kept.
//!
//! What packing does is said once, on [`Packing`].

use std::ops::Range;
use std::sync::Arc;

use super::config::cost;
use super::config::{PlanConfig, Shuffle};
use super::order::{Rows, Slot, epoch_rng, fits_u32, permute};
use super::plan::{Costs, Plan};

mod mode;
pub use mode::{Overlong, PackMode, Packing};

/// A run of one document's tokens in a window: tokens `first_token .. first_token +
/// n_tokens` of row `row`.
///
/// # Example
/// ```
/// use lodtensor::loader::Piece;
/// let p = Piece { row: 3, first_token: 0, n_tokens: 7 };
/// assert_eq!(p.n_tokens, 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// The document (global row number).
    pub row: usize,
    /// The piece's first token within the document.
    pub first_token: usize,
    /// Its number of tokens.
    pub n_tokens: usize,
}

/// How the windows of an epoch are kept.
#[derive(Clone, Debug, PartialEq)]
enum Layout {
    /// Concatenate and split: the documents in order and where each starts in the stream
    /// (`starts[i]`: tokens before document `order[i]`; one more entry, the total).
    Stream {
        order: Rows,
        /// Where each entry of `order` starts in its document, when not every entry is a
        /// whole document (the pieces a resumed epoch packs again, [`Docs`]).
        skips: Option<Vec<u32>>,
        starts: Vec<usize>,
        /// Where each window starts: the last document starting at or before its first
        /// token (Megatron-LM's sample index), a number in `order`.
        firsts: Rows,
    },
    /// Best fit: the pieces of every window, window after window.
    Bins {
        pieces: Vec<Piece>,
        starts: Vec<usize>,
    },
}

/// The windows of one epoch, in the order packing made them (before the windows are
/// shuffled and batched).
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::loader::{Loader, Packing, Piece};
/// // Documents of 1, 2, 3, 4 and 5 tokens, in windows of 4.
/// let loader = Loader::builder(&file).with_packing(Packing::new(4)).build()?;
/// let plan = loader.plan(0);
/// let windows = plan.windows().expect("a packed plan");
/// assert_eq!((windows.len(), windows.dropped_tokens()), (3, 3));
/// assert_eq!(windows.pieces(0), [Piece { row: 0, first_token: 0, n_tokens: 1 },
///     Piece { row: 1, first_token: 0, n_tokens: 2 }, Piece { row: 2, first_token: 0, n_tokens: 1 }]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Windows {
    seq_len: usize,
    window_len: usize,
    /// (first window, window length) where windows of other lengths start: windows of
    /// several parts of an epoch put together ([`Windows::joined`]); empty otherwise.
    lens: Vec<(usize, usize)>,
    layout: Layout,
    windows: usize,
    tokens: usize,
    dropped: usize,
}

impl Windows {
    /// Packs the documents `order` (rows, in the epoch's order) of lengths `lengths`.
    pub(crate) fn build(packing: &Packing, lengths: &[u32], order: Rows) -> Windows {
        Windows::of_docs(packing, Docs::whole(order, lengths))
    }

    /// Packs `docs`, in their order.
    pub(crate) fn of_docs(packing: &Packing, docs: Docs<'_>) -> Windows {
        match packing.mode() {
            PackMode::Split { pad_last } => stream(packing, pad_last, docs),
            PackMode::BestFit {
                lookahead,
                overlong,
            } => best_fit(packing, (lookahead, overlong), &docs),
        }
    }

    /// The number of windows.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(4).with_pad_last(true)).build()?;
    /// assert_eq!(loader.plan(0).windows().expect("packed").len(), 4);   // 15 tokens: 3 + a padded one
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.windows
    }

    /// Whether there is no window (fewer tokens than one window, its tail dropped).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(100)).build()?;
    /// assert!(loader.plan(0).windows().expect("packed").is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.windows == 0
    }

    /// Tokens per window, padding included (`seq_len`, plus one with the extra token); in
    /// an epoch whose parts were packed to other lengths (a pack length schedule, a resume
    /// under another `seq_len`), the first part's.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(4).with_extra_token(true)).build()?;
    /// assert_eq!(loader.plan(0).windows().expect("packed").window_len(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window_len(&self) -> usize {
        self.window_len
    }

    /// The pieces of window `w`, in order (their tokens add up to at most
    /// [`Windows::window_len`]; the rest is padding).
    ///
    /// # Panics
    /// When `w` is not below [`Windows::len`].
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing, Piece};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(4)).build()?;
    /// let plan = loader.plan(0);
    /// let last = plan.windows().expect("packed").pieces(2);   // tokens 8..12 of the stream
    /// assert_eq!(last, [Piece { row: 3, first_token: 2, n_tokens: 2 }, Piece { row: 4, first_token: 0, n_tokens: 2 }]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pieces(&self, w: usize) -> Vec<Piece> {
        let mut pieces = Vec::new();
        self.pieces_of(&[w], &mut pieces, &mut Vec::new());
        pieces
    }

    /// The pieces of windows `ids`, in order, appended to `out`, and each window's number
    /// of pieces to `counts`.
    ///
    /// Shuffled windows lie anywhere in the epoch's tables, so each window's first reads
    /// miss the cache. They are made for [`AHEAD`] windows at a time before any piece is
    /// made, so that the misses overlap rather than follow one another.
    ///
    /// # Panics
    /// When a window is not below [`Windows::len`].
    pub(crate) fn pieces_of(&self, ids: &[usize], out: &mut Vec<Piece>, counts: &mut Vec<usize>) {
        for group in ids.chunks(AHEAD) {
            let mut at = [0; AHEAD];
            for (at, &w) in at.iter_mut().zip(group) {
                assert!(w < self.windows, "window {w} of {}", self.windows);
                *at = match &self.layout {
                    Layout::Stream { firsts, .. } => firsts.get(w),
                    Layout::Bins { starts, .. } => starts[w],
                };
            }
            let at = &at[..group.len()];
            std::hint::black_box(self.touch(at));
            for (&w, &i) in group.iter().zip(at) {
                let before = out.len();
                match &self.layout {
                    Layout::Stream {
                        order,
                        skips,
                        starts,
                        ..
                    } => {
                        let total = *starts.last().expect("starts has the total");
                        let from = w * self.seq_len;
                        let to = (from + self.window_len).min(total);
                        stream_pieces((order, skips.as_deref()), starts, (i, from..to), out);
                    }
                    Layout::Bins { pieces, starts } => out.extend(&pieces[i..starts[w + 1]]),
                }
                counts.push(out.len() - before);
            }
        }
    }

    /// Windows `ids` as one run of the stream, when they follow each other, are full and do
    /// not overlap (no extra token): its tokens, the epoch's documents and where each starts
    /// in the stream (one more entry, the total), and the document holding its first token.
    pub(crate) fn run(&self, ids: &[usize]) -> Option<(Range<usize>, Stream<'_>, usize)> {
        let Layout::Stream {
            order,
            skips: None,
            starts,
            firsts,
        } = &self.layout
        else {
            return None;
        };
        let (&first, &last) = (ids.first()?, ids.last()?);
        let total = *starts.last().expect("starts has the total");
        let tokens = first * self.seq_len..(last + 1) * self.seq_len;
        let follow = ids.windows(2).all(|w| w[1] == w[0] + 1);
        // Full windows end at or before the total.
        (follow && self.window_len == self.seq_len && tokens.end <= total)
            .then(|| (tokens, (order, &starts[..]), firsts.get(first)))
    }

    /// Reads the first entries of the documents (or pieces) at `at`, all together: a
    /// prefetch.
    fn touch(&self, at: &[usize]) -> usize {
        match &self.layout {
            Layout::Stream { order, starts, .. } => {
                at.iter().fold(0, |x, &i| x ^ order.get(i) ^ starts[i])
            }
            Layout::Bins { pieces, .. } => (at.iter())
                .filter_map(|&i| pieces.get(i))
                .fold(0, |x, p| x ^ p.row),
        }
    }

    /// The tokens of window `w` that are not padding.
    pub(crate) fn tokens_of(&self, w: usize) -> usize {
        match &self.layout {
            Layout::Stream { starts, .. } => {
                let total = *starts.last().expect("starts has the total");
                (total - w * self.seq_len).min(self.window_len)
            }
            Layout::Bins { pieces, starts } => pieces[starts[w]..starts[w + 1]]
                .iter()
                .map(|p| p.n_tokens)
                .sum(),
        }
    }

    /// Tokens of the epoch in no window: the tail that does not fill one (concatenate and
    /// split), or documents over a window's length left out ([`Overlong::Drop`]).
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(4)).build()?;
    /// assert_eq!(loader.plan(0).windows().expect("packed").dropped_tokens(), 15 - 12);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dropped_tokens(&self) -> usize {
        self.dropped
    }

    /// The share of the windows' places that are padding, in `0..=1`.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::loader::{Loader, Packing};
    /// let loader = Loader::builder(&file).with_packing(Packing::new(5).with_best_fit(8)).build()?;
    /// let plan = loader.plan(0);
    /// let windows = plan.windows().expect("packed");
    /// assert_eq!(windows.len(), 3);                             // 5 | 4 1 | 3 2: no padding
    /// assert_eq!(windows.padding_fraction(), 0.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn padding_fraction(&self) -> f64 {
        let places = self.windows * self.window_len;
        if places == 0 {
            0.0
        } else {
            1.0 - self.tokens as f64 / places as f64
        }
    }
}

/// Concatenate and split.
fn stream(packing: &Packing, pad_last: bool, docs: Docs<'_>) -> Windows {
    let mut starts = Vec::with_capacity(docs.len() + 1);
    let mut total = 0usize;
    for i in 0..docs.len() {
        starts.push(total);
        total += docs.piece(i).n_tokens;
    }
    starts.push(total);
    let (seq, extra) = (packing.seq_len(), usize::from(packing.extra_token()));
    let full = total.saturating_sub(extra) / seq;
    // Past the full windows: the tokens no window reads as input.
    let rest = total - (full * seq).min(total);
    let padded = pad_last && rest > extra;
    let windows = full + usize::from(padded);
    let in_windows = if windows == 0 {
        0
    } else {
        total.min((windows - 1) * seq + seq + extra)
    };
    let tokens = (0..windows)
        .map(|w| (total - w * seq).min(seq + extra))
        .sum();
    let firsts = match fits_u32(docs.len()) {
        true => Rows::Narrow(firsts_of::<u32>(&starts, windows, seq)),
        false => Rows::Wide(firsts_of::<usize>(&starts, windows, seq)),
    };
    Windows {
        seq_len: seq,
        window_len: seq + extra,
        lens: Vec::new(),
        layout: Layout::Stream {
            order: docs.rows,
            skips: docs
                .pieces
                .map(|p| p.into_iter().map(|(first, _)| first).collect()),
            starts,
            firsts,
        },
        windows,
        tokens,
        dropped: total - in_windows,
    }
}

/// Where each of `windows` windows of `seq` tokens starts: the last document starting at
/// or before its first token, a number in the stream's order (`starts`: where each
/// document starts, and the total).
fn firsts_of<S: Slot>(starts: &[usize], windows: usize, seq: usize) -> Vec<S> {
    let mut firsts = Vec::with_capacity(windows);
    let mut i = 0;
    for w in 0..windows {
        while starts[i + 1] <= w * seq {
            i += 1;
        }
        firsts.push(S::of(i));
    }
    firsts
}

/// The pieces of stream tokens `range` (within the total), appended to `out`, document `i`
/// the first that may hold any.
fn stream_pieces(
    (order, skips): (&Rows, Option<&[u32]>),
    starts: &[usize],
    (mut i, range): (usize, Range<usize>),
    out: &mut Vec<Piece>,
) {
    let mut at = range.start;
    while at < range.end {
        let end = starts[i + 1].min(range.end);
        if end > at {
            let skip = skips.map_or(0, |s| s[i] as usize);
            out.push(Piece {
                row: order.get(i),
                first_token: at - starts[i] + skip,
                n_tokens: end - at,
            });
        }
        at = end;
        i += 1;
    }
}

/// Best-fit decreasing of whole documents, `lookahead` documents at a time.
fn best_fit(
    packing: &Packing,
    (lookahead, overlong): (usize, Overlong),
    docs: &Docs<'_>,
) -> Windows {
    let cap = packing.window_len();
    let (mut pieces, mut starts) = (Vec::new(), vec![0]);
    let (mut dropped, mut tokens) = (0, 0);
    let mut pool = Vec::new();
    for chunk in (0..docs.len()).step_by(lookahead.max(1)) {
        pool.clear();
        for i in chunk..(chunk + lookahead.max(1)).min(docs.len()) {
            let doc = docs.piece(i);
            let len = doc.n_tokens;
            if len > cap && overlong == Overlong::Drop {
                dropped += len;
                continue;
            }
            for first in (0..len).step_by(cap) {
                let n_tokens = (len - first).min(cap);
                pool.push(Piece {
                    row: doc.row,
                    first_token: doc.first_token + first,
                    n_tokens,
                });
            }
        }
        tokens += pool.iter().map(|p| p.n_tokens).sum::<usize>();
        for bin in fit_decreasing(&mut pool, cap) {
            pieces.extend(bin);
            starts.push(pieces.len());
        }
    }
    Windows {
        seq_len: packing.seq_len(),
        window_len: cap,
        lens: Vec::new(),
        windows: starts.len() - 1,
        layout: Layout::Bins { pieces, starts },
        tokens,
        dropped,
    }
}

/// The bins of `pool` by best-fit decreasing: the longest piece first, each into the bin
/// with the least room that holds it (a new bin when none does); bins in the order they
/// were opened, each bin's pieces in the order of `pool`.
fn fit_decreasing(pool: &mut [Piece], cap: usize) -> Vec<Vec<Piece>> {
    // All in one bin when they fit (then no table of rooms as long as a huge window).
    if pool.iter().map(|p| p.n_tokens).sum::<usize>() <= cap {
        return match pool.is_empty() {
            true => Vec::new(),
            false => vec![pool.to_vec()],
        };
    }
    let mut by_length: Vec<usize> = (0..pool.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(pool[i].n_tokens)); // Stable: ties in order.
    let mut bins: Vec<Vec<usize>> = Vec::new();
    let mut rooms = Rooms::new(cap);
    for i in by_length {
        let len = pool[i].n_tokens;
        let (left, bin) = match rooms.take_at_least(len) {
            Some(found) => found,
            None => {
                bins.push(Vec::new());
                (cap, bins.len() - 1)
            }
        };
        bins[bin].push(i);
        if left > len {
            rooms.put(left - len, bin);
        }
    }
    bins.into_iter()
        .map(|mut b| {
            b.sort_unstable();
            b.into_iter().map(|i| pool[i]).collect()
        })
        .collect()
}

/// The open bins by room left (`1..=cap`), with a bit per room that has any, so that the
/// least room of at least `n` is a scan of `cap / 64` words at most.
struct Rooms {
    bins: Vec<Vec<usize>>,
    any: Vec<u64>,
}

impl Rooms {
    fn new(cap: usize) -> Self {
        Rooms {
            bins: vec![Vec::new(); cap + 1],
            any: vec![0; (cap + 1).div_ceil(64)],
        }
    }

    fn put(&mut self, room: usize, bin: usize) {
        self.bins[room].push(bin);
        self.any[room / 64] |= 1 << (room % 64);
    }

    /// (room, bin) of a bin with the least room of at least `n`, taken out.
    fn take_at_least(&mut self, n: usize) -> Option<(usize, usize)> {
        let mut word = n / 64;
        let mut bits = *self.any.get(word)? & (u64::MAX << (n % 64));
        while bits == 0 {
            word += 1;
            bits = *self.any.get(word)?;
        }
        let room = word * 64 + bits.trailing_zeros() as usize;
        let bin = self.bins[room]
            .pop()
            .expect("a bit for every room with bins");
        if self.bins[room].is_empty() {
            self.any[word] &= !(1 << (room % 64));
        }
        Some((room, bin))
    }
}

/// What an epoch packs, in order: whole documents, or (an epoch resumed under other
/// options) the pieces of them that no earlier part of the epoch read.
#[derive(Clone)]
pub(crate) struct Docs<'a> {
    /// The documents (global rows), one entry per document or piece.
    pub rows: Rows,
    /// Every document's length.
    pub lengths: &'a [u32],
    /// Per entry: its first token and number of tokens; `None`: whole documents.
    pub pieces: Option<Vec<(u32, u32)>>,
}

impl<'a> Docs<'a> {
    /// The whole documents `rows`.
    pub(crate) fn whole(rows: Rows, lengths: &'a [u32]) -> Self {
        Docs {
            rows,
            lengths,
            pieces: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Entry `i`.
    pub(crate) fn piece(&self, i: usize) -> Piece {
        let row = self.rows.get(i);
        let (first_token, n_tokens) = match &self.pieces {
            Some(p) => (p[i].0 as usize, p[i].1 as usize),
            None => (0, self.lengths[row] as usize),
        };
        Piece {
            row,
            first_token,
            n_tokens,
        }
    }
}

/// The epoch's documents in order, and where each starts in the stream (and the total).
pub(crate) type Stream<'a> = (&'a Rows, &'a [usize]);

/// Windows whose first reads are made together ([`Windows::pieces_of`]).
const AHEAD: usize = 16;

/// Salt of the window shuffle's generator, apart from the documents'.
const WINDOW_SALT: u64 = 0x7769_6e64_6f77_7321;

/// The order an epoch reads `windows` windows in: as packing made them, shuffled when the
/// documents are ([`Shuffle::Samples`], as Megatron-LM's shuffle index).
pub(super) fn window_order<S: Slot>(config: &PlanConfig, windows: usize, epoch: u64) -> Vec<S> {
    let mut order: Vec<S> = (0..windows).map(S::of).collect();
    if let Shuffle::Samples { seed } = config.shuffle {
        permute(&mut epoch_rng(seed ^ WINDOW_SALT, epoch), &mut order);
    }
    order
}

/// The plan of a packed epoch: the documents of `order` packed into windows, read in
/// [`window_order`], shared by ranks and batched as samples are.
pub(super) fn packed_plan(
    config: &PlanConfig,
    packing: &Packing,
    lengths: &[u32],
    order: Rows,
    epoch: u64,
) -> Plan {
    let windows = Windows::build(packing, lengths, order);
    let n = windows.len();
    match fits_u32(n) {
        true => windows.plan(config, &window_order::<u32>(config, n, epoch), epoch),
        false => windows.plan(config, &window_order::<usize>(config, n, epoch), epoch),
    }
}

impl Windows {
    /// The plan of these windows in `order`, shared by ranks and batched as samples are,
    /// each window costing what its pieces and padding do ([`Windows::costs`]; with no
    /// attention weight, its length). Windows' token counts are kept in 32 bits when a
    /// window's length fits.
    pub(super) fn plan<S: Slot>(self, config: &PlanConfig, order: &[S], epoch: u64) -> Plan {
        self.plan_of(config, order, epoch)
            .with_windows(Arc::new(self))
    }

    /// [`Windows::plan`], the windows left where they are (the plan holds none).
    pub(super) fn plan_of<S: Slot>(&self, config: &PlanConfig, order: &[S], epoch: u64) -> Plan {
        let w = config.weight();
        let table: Vec<f64>;
        let costs = if w == 0.0 {
            Costs::Each(self.window_len as f64)
        } else {
            table = self.costs(w);
            Costs::Table(&table)
        };
        match fits_u32(self.window_len) {
            true => Plan::of_ranks(
                config,
                (&self.token_counts::<u32>()[..], &costs),
                order,
                epoch,
            ),
            false => Plan::of_ranks(
                config,
                (&self.token_counts::<usize>()[..], &costs),
                order,
                epoch,
            ),
        }
    }

    /// The tokens of each window that are not padding ([`Windows::tokens_of`]).
    fn token_counts<S: Slot>(&self) -> Vec<S> {
        (0..self.len()).map(|w| S::of(self.tokens_of(w))).collect()
    }

    /// Each window's cost: `n + w·n²` over its pieces of `n` tokens, plus its padding's
    /// length.
    fn costs(&self, w: f64) -> Vec<f64> {
        let (mut pieces, mut counts) = (Vec::new(), Vec::new());
        let mut out = Vec::with_capacity(self.len());
        let ids: Vec<usize> = (0..self.len()).collect();
        for group in ids.chunks(4096) {
            pieces.clear();
            counts.clear();
            self.pieces_of(group, &mut pieces, &mut counts);
            let mut at = 0;
            for &count in &counts {
                let window = &pieces[at..at + count];
                let tokens: usize = window.iter().map(|p| p.n_tokens).sum();
                let padding = self.window_len.saturating_sub(tokens) as f64;
                out.push(window.iter().map(|p| cost(p.n_tokens, w)).sum::<f64>() + padding);
                at += count;
            }
        }
        out
    }
}

impl Windows {
    /// Windows `ids` of these, in that order, each piece's row renumbered by `row`: the
    /// windows of one batch over the rows it read alone.
    pub(super) fn subset(&self, ids: &[usize], row: impl Fn(usize) -> usize) -> Windows {
        let (mut pieces, mut starts) = (Vec::new(), vec![0]);
        for &w in ids {
            let own = self.pieces(w).into_iter();
            pieces.extend(own.map(|p| Piece {
                row: row(p.row),
                ..p
            }));
            starts.push(pieces.len());
        }
        Windows {
            seq_len: self.seq_len,
            ..windows_of_pieces(self.longest_of(ids), pieces, starts)
        }
    }
}

/// Windows made of the given pieces, window after window (`starts`: where each window's
/// pieces start, and one more entry, the end).
pub(super) fn windows_of_pieces(
    window_len: usize,
    pieces: Vec<Piece>,
    starts: Vec<usize>,
) -> Windows {
    let tokens = pieces.iter().map(|p| p.n_tokens).sum();
    Windows {
        seq_len: window_len,
        window_len,
        lens: Vec::new(),
        windows: starts.len() - 1,
        layout: Layout::Bins { pieces, starts },
        tokens,
        dropped: 0,
    }
}

mod rest;
#[cfg(test)]
pub(super) mod tests;
