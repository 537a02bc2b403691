//! Messages of bounded size: an error echoes what it was given (a loader state, a column
//! name, a path), and what it was given may be megabytes. A [`Bounded`] writer keeps the
//! start and the end of what goes through it and replaces the middle by its length, without
//! holding the whole text.

use std::fmt::{self, Write};

/// The most bytes of an [`Error`](crate::Error)'s message (its `Display`): its first
/// [`MESSAGE_HEAD`] bytes, the count of those elided, and its last [`MESSAGE_TAIL`].
pub(crate) const MESSAGE_BYTES: usize = 1000;
/// The bytes a long message keeps from its start.
pub(crate) const MESSAGE_HEAD: usize = 640;
/// The bytes a long message keeps from its end.
pub(crate) const MESSAGE_TAIL: usize = 240;
// The start, the count of bytes elided (at most 20 digits and its brackets) and the end fit.
const _: () = assert!(MESSAGE_HEAD + MESSAGE_TAIL + 40 <= MESSAGE_BYTES);

/// The bytes a value quoted in a message keeps from its start and from its end
/// ([`Elided`]).
const VALUE_HEAD: usize = 120;
const VALUE_TAIL: usize = 40;

/// A writer that passes on the first `head` bytes written, keeps the last `tail`, and
/// counts the rest; [`Bounded::finish`] writes the count and the end.
pub(crate) struct Bounded<W: Write> {
    out: W,
    head_left: usize,
    tail: String,
    tail_bytes: usize,
    elided: usize,
    /// A line break was written and not yet replaced by a space.
    line_break: bool,
}

impl<W: Write> Bounded<W> {
    /// A writer into `out` keeping `head` bytes from the start and `tail` from the end.
    pub(crate) fn new(out: W, head: usize, tail: usize) -> Self {
        Bounded {
            out,
            head_left: head,
            tail: String::new(),
            tail_bytes: tail,
            elided: 0,
            line_break: false,
        }
    }

    /// Writes what was kept of the end, after the count of the bytes elided if any.
    pub(crate) fn finish(mut self) -> fmt::Result {
        self.trim();
        if self.elided > 0 {
            write!(self.out, "…[{} bytes elided]…", self.elided)?;
        }
        self.out.write_str(&self.tail)
    }

    /// Drops the start of the kept end past `tail_bytes` (at a character's boundary).
    fn trim(&mut self) {
        if self.tail.len() > self.tail_bytes {
            let cut = ceil_boundary(&self.tail, self.tail.len() - self.tail_bytes);
            self.elided += cut;
            self.tail.drain(..cut);
        }
    }
}

impl<W: Write> Write for Bounded<W> {
    /// Line breaks (a dependency's message may end in two) become one space each run, none
    /// at the end: a message is one line.
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for (i, line) in s.split(['\n', '\r']).enumerate() {
            if i > 0 {
                self.line_break = true;
            }
            if !line.is_empty() {
                if std::mem::take(&mut self.line_break) {
                    self.write_plain(" ")?;
                }
                self.write_plain(line)?;
            }
        }
        Ok(())
    }
}

impl<W: Write> Bounded<W> {
    /// Writes `s`, which holds no line break.
    fn write_plain(&mut self, mut s: &str) -> fmt::Result {
        if self.head_left > 0 {
            let mut at = s.len().min(self.head_left);
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            self.out.write_str(&s[..at])?;
            self.head_left = if at < s.len() { 0 } else { self.head_left - at };
            s = &s[at..];
        }
        if s.len() >= self.tail_bytes {
            // Only its end can stay: what was kept before goes, unheld.
            let cut = ceil_boundary(s, s.len() - self.tail_bytes);
            self.elided += self.tail.len() + cut;
            self.tail.clear();
            self.tail.push_str(&s[cut..]);
        } else {
            self.tail.push_str(s);
            if self.tail.len() > 2 * self.tail_bytes {
                self.trim();
            }
        }
        Ok(())
    }
}

/// The first character boundary of `s` at or after `at`.
fn ceil_boundary(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A value quoted in a message, displayed with at most a few hundred bytes: a long one as
/// its start, `…[N bytes elided]…` and its end.
pub(crate) struct Elided<T>(pub T);

impl<T: fmt::Display> fmt::Display for Elided<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Bounded::new(&mut *f, VALUE_HEAD, VALUE_TAIL);
        write!(out, "{}", self.0)?;
        out.finish()
    }
}

/// `value` as [`Elided`] displays it, for an error to hold.
pub(crate) fn elided(value: impl fmt::Display) -> String {
    Elided(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_keeps_its_start_and_end_and_counts_the_rest() {
        assert_eq!(elided("short"), "short");
        let long = format!(
            "{}{}{}",
            "a".repeat(200),
            "é".repeat(5_000_000),
            "z".repeat(50)
        );
        let shown = elided(&long);
        assert!(shown.len() < 300, "{}", shown.len());
        assert!(shown.starts_with(&"a".repeat(120)));
        assert!(shown.ends_with(&format!("{}{}", "é".repeat(0), "z".repeat(40))));
        let (kept_bytes, elided_bytes) = (shown.len() - shown.find('…').unwrap(), long.len());
        assert!(kept_bytes < elided_bytes);
        assert!(
            shown.contains(&format!("[{} bytes elided]", long.len() - 160)),
            "{shown}"
        );
        // Written in many small pieces, the same.
        let mut pieces = String::new();
        let mut out = Bounded::new(&mut pieces, 120, 40);
        for c in long.chars() {
            out.write_char(c).unwrap();
        }
        out.finish().unwrap();
        assert_eq!(pieces, shown);
    }

    #[test]
    fn line_breaks_become_one_space_and_none_ends_a_message() {
        // A dependency's message ending in two line breaks (found by pending_commit).
        assert_eq!(elided("out of bounds.\n\n"), "out of bounds.");
        assert_eq!(elided("a\r\nb\nc"), "a b c");
        let e = crate::error::Error::internal("Range [5, 9) is out of bounds.\n\n");
        let message = e.to_string();
        assert!(
            message.contains("Range [5, 9) is out of bounds. "),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }
}
