//! What an epoch's windows leave for the rest of the epoch, and windows of several parts
//! of an epoch put together: an epoch resumed or scheduled under other packing options
//! (`docs/design.md`, "Changing options within an epoch").

use super::{Docs, Layout, Piece, Windows, stream_pieces};
use crate::loader::order::{Rows, fits_u32};

impl Windows {
    /// The tokens that the windows `read` says were read did not hold as input, in the
    /// order packing took them: a window holds its first `seq_len` tokens (with the extra
    /// token, its last is the next window's first), a best-fit window all its tokens; the
    /// tail no window holds is left too. A best-fit document left out
    /// ([`Overlong::Drop`](super::Overlong::Drop)) stays out.
    pub(crate) fn unread<'a>(&self, lengths: &'a [u32], read: impl Fn(usize) -> bool) -> Docs<'a> {
        let mut pieces = Vec::new();
        match &self.layout {
            Layout::Stream {
                order,
                skips,
                starts,
                ..
            } => {
                let total = *starts.last().expect("starts has the total");
                let mut cursor = 0;
                let take = |range: std::ops::Range<usize>, out: &mut Vec<Piece>| {
                    if range.start < range.end {
                        let first = starts.partition_point(|&s| s <= range.start) - 1;
                        stream_pieces((order, skips.as_deref()), starts, (first, range), out);
                    }
                };
                for w in (0..self.windows).filter(|&w| read(w)) {
                    let from = w * self.seq_len;
                    take(cursor..from, &mut pieces);
                    cursor = (from + self.seq_len).min(total);
                }
                take(cursor..total, &mut pieces);
            }
            Layout::Bins { .. } => {
                let unread: Vec<usize> = (0..self.windows).filter(|&w| !read(w)).collect();
                self.pieces_of(&unread, &mut pieces, &mut Vec::new());
            }
        }
        docs_of(pieces, lengths)
    }

    /// The length of window `w`'s place, padding included: [`Windows::window_len`], unless
    /// windows of parts packed to other lengths were put together.
    pub(crate) fn window_len_of(&self, w: usize) -> usize {
        let i = self.lens.partition_point(|&(first, _)| first <= w);
        i.checked_sub(1).map_or(self.window_len, |i| self.lens[i].1)
    }

    /// The longest place of windows `ids` ([`Windows::window_len_of`]).
    pub(crate) fn longest_of(&self, ids: &[usize]) -> usize {
        (ids.iter().map(|&w| self.window_len_of(w)).max()).unwrap_or(self.window_len)
    }

    /// These windows, those from each `(first window, length)` of `lens` on of that length
    /// (the first from window 0): windows packed to other lengths put together.
    pub(crate) fn with_lens(mut self, lens: Vec<(usize, usize)>) -> Windows {
        self.window_len = lens.first().map_or(self.window_len, |&(_, l)| l);
        self.seq_len = self.window_len;
        self.lens = match lens.len() > 1 {
            true => lens,
            false => Vec::new(),
        };
        self
    }

    /// Windows `ids` of each of `parts`, one part after the other, as one set of windows
    /// (numbered in that order); the tokens dropped are the last part's.
    pub(crate) fn joined(parts: &[(&Windows, &[usize])]) -> Windows {
        let (mut pieces, mut starts, mut lens) = (Vec::new(), vec![0], Vec::new());
        let mut tokens = 0;
        for (windows, ids) in parts {
            for (i, &w) in ids.iter().enumerate() {
                let len = windows.window_len_of(w);
                if lens.last().map(|&(_, l)| l) != Some(len) {
                    lens.push((starts.len() - 1 + i, len));
                }
            }
            let mut counts = Vec::with_capacity(ids.len());
            windows.pieces_of(ids, &mut pieces, &mut counts);
            for count in counts {
                starts.push(starts.last().expect("a start") + count);
            }
            tokens += ids.iter().map(|&w| windows.tokens_of(w)).sum::<usize>();
        }
        // The tokens earlier parts left went to the parts after them.
        let dropped = parts.last().map_or(0, |(w, _)| w.dropped);
        let window_len = lens.first().map_or(0, |&(_, l)| l);
        Windows {
            seq_len: window_len,
            window_len,
            lens,
            windows: starts.len() - 1,
            layout: Layout::Bins { pieces, starts },
            tokens,
            dropped,
        }
    }
}

/// `pieces`, adjacent pieces of one document merged, as what an epoch packs.
fn docs_of(pieces: Vec<Piece>, lengths: &[u32]) -> Docs<'_> {
    let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
    for p in pieces {
        match merged.last_mut() {
            Some(last)
                if last.row == p.row && last.first_token + last.n_tokens == p.first_token =>
            {
                last.n_tokens += p.n_tokens;
            }
            _ => merged.push(p),
        }
    }
    let rows: Vec<usize> = merged.iter().map(|p| p.row).collect();
    let rows = match rows.iter().all(|&r| fits_u32(r)) {
        true => Rows::Narrow(rows.into_iter().map(|r| r as u32).collect()),
        false => Rows::Wide(rows),
    };
    // A document's tokens are fewer than 2^32 (lengths are 32-bit).
    let firsts = merged
        .iter()
        .map(|p| (p.first_token as u32, p.n_tokens as u32));
    Docs {
        rows,
        lengths,
        pieces: Some(firsts.collect()),
    }
}
