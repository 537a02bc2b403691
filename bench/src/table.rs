//! The report's table: one row a measurement, with its figure, the baseline it is compared
//! with (measured in the same run), the ratio, the target and whether it is met.

use std::fmt;

/// The unit a figure is shown in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Milliseconds,
    Nanoseconds,
    GigabytesPerSecond,
    MegabytesPerSecond,
    MegatokensPerSecond,
    Mebibytes,
}

/// A measured quantity.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    amount: f64,
    unit: Unit,
}

impl Figure {
    /// A duration shown in milliseconds.
    pub fn ms(seconds: f64) -> Self {
        Figure {
            amount: seconds * 1e3,
            unit: Unit::Milliseconds,
        }
    }

    /// A duration shown in nanoseconds.
    pub fn ns(seconds: f64) -> Self {
        Figure {
            amount: seconds * 1e9,
            unit: Unit::Nanoseconds,
        }
    }

    /// `bytes` in `seconds`, in GB/s.
    pub fn gb_per_s(bytes: u64, seconds: f64) -> Self {
        Figure {
            amount: bytes as f64 / 1e9 / seconds,
            unit: Unit::GigabytesPerSecond,
        }
    }

    /// `bytes` in `seconds`, in MB/s.
    pub fn mb_per_s(bytes: u64, seconds: f64) -> Self {
        Figure {
            amount: bytes as f64 / 1e6 / seconds,
            unit: Unit::MegabytesPerSecond,
        }
    }

    /// `tokens` in `seconds`, in millions per second.
    pub fn mtokens_per_s(tokens: usize, seconds: f64) -> Self {
        Figure {
            amount: tokens as f64 / 1e6 / seconds,
            unit: Unit::MegatokensPerSecond,
        }
    }

    /// A size in MiB (memory).
    pub fn mib(bytes: u64) -> Self {
        Figure {
            amount: bytes as f64 / (1u64 << 20) as f64,
            unit: Unit::Mebibytes,
        }
    }

    /// How many times better `self` is than `other` (shorter, faster or smaller).
    fn times_better_than(&self, other: &Figure) -> f64 {
        debug_assert_eq!(self.unit, other.unit);
        match self.unit {
            Unit::Milliseconds | Unit::Nanoseconds | Unit::Mebibytes => other.amount / self.amount,
            _ => self.amount / other.amount,
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.amount;
        match self.unit {
            Unit::Milliseconds => write!(f, "{a:.3} ms"),
            Unit::Nanoseconds => write!(f, "{a:.1} ns"),
            Unit::GigabytesPerSecond => write!(f, "{a:.2} GB/s"),
            Unit::MegabytesPerSecond => write!(f, "{a:.0} MB/s"),
            Unit::MegatokensPerSecond => write!(f, "{a:.1} M tokens/s"),
            Unit::Mebibytes => write!(f, "{a:.0} MiB"),
        }
    }
}

/// How a row shows its ratio.
#[derive(Clone, Copy, Debug)]
pub enum Ratio {
    /// `2.10×`: how many times faster than the baseline.
    Times,
    /// `95 %`: our speed as a share of the baseline's.
    Percent,
}

impl Ratio {
    fn show(self, ratio: f64) -> String {
        match self {
            Ratio::Times => format!("{ratio:.2}×"),
            Ratio::Percent => format!("{:.0} %", ratio * 100.0),
        }
    }
}

/// The target for a row.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// The ratio is at least this.
    RatioAtLeast(f64),
    /// The figure is at most this (a duration or a size).
    AtMost(Figure),
    /// The figure is at least this (a rate).
    AtLeast(Figure),
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct Row {
    measurement: String,
    figure: Figure,
    /// What it is compared with, and its figure or why there is none.
    baseline: Option<(String, Result<Figure, String>)>,
    ratio: Ratio,
    target: Option<Target>,
}

impl Row {
    /// A row of its own, compared with nothing.
    pub fn alone(measurement: impl Into<String>, figure: Figure) -> Self {
        Row {
            measurement: measurement.into(),
            figure,
            baseline: None,
            ratio: Ratio::Times,
            target: None,
        }
    }

    /// A row compared with `baseline`, named `name`, its ratio shown as `ratio`.
    pub fn compared(
        measurement: impl Into<String>,
        figure: Figure,
        name: impl Into<String>,
        baseline: Result<Figure, String>,
        ratio: Ratio,
    ) -> Self {
        Row {
            baseline: Some((name.into(), baseline)),
            ratio,
            ..Row::alone(measurement, figure)
        }
    }

    /// The same row with the target.
    pub fn with_target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    fn ratio(&self) -> Option<f64> {
        match &self.baseline {
            Some((_, Ok(b))) => Some(self.figure.times_better_than(b)),
            _ => None,
        }
    }

    /// Whether the target is met; `None` without a target or without a baseline.
    fn met(&self) -> Option<bool> {
        match self.target? {
            Target::RatioAtLeast(min) => self.ratio().map(|r| r >= min),
            Target::AtMost(max) => Some(self.figure.amount <= max.amount),
            Target::AtLeast(min) => Some(self.figure.amount >= min.amount),
        }
    }

    fn cells(&self) -> [String; 6] {
        let baseline = match &self.baseline {
            None => String::new(),
            Some((name, Ok(figure))) => format!("{name}: {figure}"),
            Some((name, Err(_))) => format!("{name}: not measured"),
        };
        let target = match self.target {
            None => String::new(),
            Some(Target::RatioAtLeast(min)) => format!("≥ {}", self.ratio.show(min)),
            Some(Target::AtMost(max)) => format!("≤ {max}"),
            Some(Target::AtLeast(min)) => format!("≥ {min}"),
        };
        let met = match (self.target, self.met()) {
            (None, _) => "",
            (Some(_), None) => "—",
            (Some(_), Some(true)) => "yes",
            (Some(_), Some(false)) => "**no**",
        };
        [
            self.measurement.clone(),
            self.figure.to_string(),
            baseline,
            self.ratio()
                .map_or_else(String::new, |r| self.ratio.show(r)),
            target,
            met.to_owned(),
        ]
    }
}

/// The rows as one markdown table.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| measurement | figure | compared with | ratio | target | met? |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&format!("| {} |\n", row.cells().join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_targets() {
        let row = Row::compared(
            "open",
            Figure::ms(0.001),
            "pyarrow",
            Ok(Figure::ms(0.003)),
            Ratio::Times,
        )
        .with_target(Target::RatioAtLeast(2.0));
        assert_eq!(
            row.cells(),
            [
                "open",
                "1.000 ms",
                "pyarrow: 3.000 ms",
                "3.00×",
                "≥ 2.00×",
                "yes"
            ]
            .map(String::from)
        );
        let row = Row::compared(
            "scan",
            Figure::gb_per_s(8, 1.0),
            "raw",
            Ok(Figure::gb_per_s(10, 1.0)),
            Ratio::Percent,
        )
        .with_target(Target::RatioAtLeast(0.9));
        assert_eq!(
            row.cells()[3..],
            ["80 %", "≥ 90 %", "**no**"].map(String::from)
        );
        let row = Row::compared(
            "x",
            Figure::ns(1e-9),
            "pyarrow",
            Err("none".into()),
            Ratio::Times,
        )
        .with_target(Target::RatioAtLeast(1.0));
        assert_eq!(
            row.cells()[2..],
            ["pyarrow: not measured", "", "≥ 1.00×", "—"].map(String::from)
        );
    }
}
