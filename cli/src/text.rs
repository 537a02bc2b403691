//! What the subcommands print: row ranges as typed, elements, sizes, plurals, progress.

use std::ops::Range;
use std::str::FromStr;

use arrow_array::cast::AsArray;
use arrow_array::downcast_primitive_array;
use arrow_schema::DataType;
use indicatif::{ProgressBar, ProgressStyle};
use lodtensor::Values;

/// A row range on the command line: `A..B`, `A..`, `..B` or `A` (the one row `A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRange {
    pub start: usize,
    pub end: Option<usize>,
}

impl RowRange {
    /// The range over a file of `rows` rows (an open end is the last row).
    pub fn resolve(self, rows: usize) -> Range<usize> {
        self.start..self.end.unwrap_or(rows.max(self.start))
    }
}

impl FromStr for RowRange {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let number = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("{t:?} is not a row number (expected A..B, A.., ..B or A)"))
        };
        match s.split_once("..") {
            None => {
                let start = number(s)?;
                Ok(RowRange {
                    start,
                    end: Some(start + 1),
                })
            }
            Some((a, b)) => {
                let start = if a.is_empty() { 0 } else { number(a)? };
                let end = if b.is_empty() { None } else { Some(number(b)?) };
                if end.is_some_and(|e| e < start) {
                    return Err(format!("{s}: the range ends before it starts"));
                }
                Ok(RowRange { start, end })
            }
        }
    }
}

/// The text of element `e` of `values`: its item when it has one, or `[a,b,…]` (at most 8
/// items shown).
pub fn element_text(values: &Values, e: usize) -> String {
    let size = values.element_size();
    let items = e * size..(e + 1) * size;
    let shown = items.start..items.end.min(items.start + 8);
    let texts: Vec<String> = shown.map(|i| item_text(values, i)).collect();
    if size == 1 {
        return texts.concat();
    }
    let more = if size > 8 { ",…" } else { "" };
    format!("[{}{more}]", texts.join(","))
}

/// Item `i` of `values`: a number as Rust's `{:?}` writes it (floats keep their `.0`), a
/// boolean as `1` or `0`.
fn item_text(values: &Values, i: usize) -> String {
    let items = values.items().as_ref();
    downcast_primitive_array!(
        items => format!("{:?}", items.value(i)),
        DataType::Boolean => if items.as_boolean().value(i) { "1" } else { "0" }.to_owned(),
        _ => String::new(),
    )
}

/// `1 byte`, `2 bytes`, …, with the size in MB past 10 MB.
pub fn bytes_text(bytes: u64) -> String {
    match bytes {
        1 => "1 byte".to_owned(),
        b if b >= 10_000_000 => format!("{b} bytes ({:.1} MB)", b as f64 / 1e6),
        b => format!("{b} bytes"),
    }
}

/// `1 thing`, `n things` (`n batches`).
pub fn plural(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        _ if thing.ends_with("ch") => format!("{n} {thing}es"),
        _ => format!("{n} {thing}s"),
    }
}

/// A progress bar on stderr (drawn only when stderr is a terminal), cleared when done.
pub fn progress(len: u64, message: &'static str, unit: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(len).with_style(
        ProgressStyle::with_template(&format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit}"))
            .expect("a valid template"),
    );
    bar.set_message(message);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_row_ranges() {
        let r = |s: &str| s.parse::<RowRange>();
        assert_eq!(r("2..5").unwrap().resolve(10), 2..5);
        assert_eq!(r("2..").unwrap().resolve(10), 2..10);
        assert_eq!(r("..3").unwrap().resolve(10), 0..3);
        assert_eq!(r("4").unwrap().resolve(10), 4..5);
        assert!(r("5..2").is_err());
        assert!(r("a..b").is_err());
    }
}
