//! The report around the table: when, on which machine, on which dataset, how the figures
//! were taken; and the README section it replaces.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::dataset::BenchData;

/// The line before the README section the report replaces.
pub const BEGIN: &str = "<!-- bench:begin -->";
/// The line after it.
pub const END: &str = "<!-- bench:end -->";

/// The run's circumstances, printed above the table.
pub struct Context<'a> {
    /// `--scale`.
    pub scale: f64,
    /// The dataset.
    pub data: &'a BenchData,
    /// Record batches of the file.
    pub batches: usize,
    /// Documents per Parquet row group.
    pub group_rows: usize,
    /// pyarrow's and numpy's versions, or why they were not measured.
    pub python: Result<String, String>,
    /// `/proc/loadavg`'s first figure at the start.
    pub load: String,
}

/// The report: the context, the table, how the figures were taken.
pub fn body(c: &Context<'_>, table: &str) -> String {
    let d = c.data;
    let scale = if c.scale == 1.0 {
        String::new()
    } else {
        format!(" --scale {}", c.scale)
    };
    let python = match &c.python {
        Ok(versions) => format!(
            "pyarrow and numpy ({versions}) run in a child process right after, on the same \
             file, and report the best of 3 to 51 runs too"
        ),
        Err(why) => format!("pyarrow and numpy were not measured: {why}"),
    };
    format!(
        "Measured {} with `cargo build --release -p lodtensor-bench && target/release/lodtensor-bench{scale}` on {} (load \
         average {} at the start). Dataset (seed 42): {} documents of 1–30 sentences of 1–120 \
         tokens of `f32[64]`: {} sentences, {} tokens, {:.1} MB of values in a {:.1} MB file \
         of {} record {}.\n\n{table}\nEach figure is the **best** (fastest) of 3 to 51 runs; an \
         operation and its in-process baseline run alternately (ours, baseline, ours, …). \
         {python}. Ratios: `×` is how many times faster than the baseline, `%` our speed as a \
         share of the baseline's. Writes include `fsync` on both sides (our write also renames \
         and syncs the directory), which costs nothing in the page cache of `/dev/shm` and \
         decides the disk rows. Parquet: the first export rows write the dataset's uniform \
         values into memory; the rows after them read and write files in the page cache, \
         with the values replaced by normal ones (incompressible) and by the same quantized to \
         steps of 0.25 (low entropy), same LoD. Both writers use the same settings: no \
         dictionary, row groups of {} documents (about 128 MiB of values at scale 1), \
         column-chunk statistics on, no page index, zstd at level 1; the import reads \
         pyarrow's file. The `convert` rows \
         time whole processes, `lodtensor convert` against a Python process doing the same \
         with pyarrow at its defaults (dictionary on, its row groups), both syncing the \
         output; the peak RSS is the `convert` process's `VmHWM`, polled.\n",
        now_utc(),
        machine(),
        c.load,
        d.docs,
        d.sentences,
        d.tokens,
        d.value_bytes as f64 / 1e6,
        d.file_bytes as f64 / 1e6,
        c.batches,
        if c.batches == 1 { "batch" } else { "batches" },
        c.group_rows,
    )
}

/// `text` with the lines between [`BEGIN`] and [`END`] replaced by `section`; `None`
/// without both markers in that order.
pub fn replace_section(text: &str, section: &str) -> Option<String> {
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    Some(format!("{}\n{section}{}", &text[..start], &text[end..]))
}

/// `2 cores, 23.4 GiB, <CPU model>` from `/proc`.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let field = |file: &str, key: &str| {
        std::fs::read_to_string(file).ok().and_then(|text| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| Some(l.split_once(':')?.1.trim().to_owned()))
        })
    };
    let memory = field("/proc/meminfo", "MemTotal")
        .and_then(|kb| kb.trim_end_matches(" kB").parse::<f64>().ok())
        .map_or_else(
            || "? GiB".to_owned(),
            |kb| format!("{:.1} GiB", kb / (1 << 20) as f64),
        );
    let cpu = field("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores, {memory}, {cpu}")
}

/// The first figure of `/proc/loadavg`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// `YYYY-MM-DD HH:MM UTC`, now.
fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_date(secs.div_euclid(86_400) as i64);
    let minutes = secs % 86_400 / 60;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}

/// The Gregorian date of `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(20_414), (2025, 11, 22));
    }

    #[test]
    fn sections() {
        let text = format!("a\n{BEGIN}\nold\n{END}\nb\n");
        assert_eq!(
            replace_section(&text, "new\n").unwrap(),
            format!("a\n{BEGIN}\nnew\n{END}\nb\n")
        );
        assert_eq!(replace_section("a\nb\n", "new\n"), None);
    }
}
