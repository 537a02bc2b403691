//! The weights a mixture draws by over its stream: one set, or a schedule whose sets take
//! over at the first sample at or past their points in tokens drawn. Each set's rule starts
//! afresh where it takes over (its counts from there), so every source stays within a
//! sample of its share of the samples drawn under each set.

use std::sync::Mutex;

use super::stream::Given;
use super::{Blend, SourceEpoch, draw_with, rule_period};
use crate::loader::config::PlanConfig;

/// One set of weights, from `from` tokens drawn.
#[derive(Debug)]
pub(super) struct Rule {
    pub from: u64,
    pub weights: Vec<f64>,
    /// The rule's period and each source's samples in it ([`rule_period`]), if it has one.
    pub period: Option<(u64, Vec<u64>)>,
}

/// Where a set of weights took over: its first sample and each source's draws before it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Switch {
    pub start: u128,
    pub drawn: Vec<u128>,
    pub rule: usize,
}

/// The sets of weights, and where each took over as far as the stream has been walked.
#[derive(Debug)]
pub(super) struct Rules {
    pub rules: Vec<Rule>,
    walked: Mutex<Walked>,
}

/// The stream walked so far: the switches found, and the next sample's place.
#[derive(Clone, Debug)]
struct Walked {
    switches: Vec<Switch>,
    at: u128,
    drawn: Vec<u128>,
    tokens: u128,
}

impl Rules {
    /// The rules of `points` (tokens, normalized weights), the first at 0, for `sources`.
    pub fn new(points: Vec<(u64, Vec<f64>)>, sources: usize) -> Self {
        let rules = (points.into_iter())
            .map(|(from, weights)| Rule {
                from,
                period: rule_period(&weights),
                weights,
            })
            .collect();
        let first = Switch {
            start: 0,
            drawn: vec![0; sources],
            rule: 0,
        };
        let walked = Walked {
            switches: vec![first],
            at: 0,
            drawn: vec![0; sources],
            tokens: 0,
        };
        Rules {
            rules,
            walked: Mutex::new(walked),
        }
    }

    /// The switches of the samples before `end` (the stream walked that far first).
    pub fn switches(&self, blend: &Blend, input: (&PlanConfig, &[u32]), end: u128) -> Vec<Switch> {
        // A poisoned lock held a walk cut short: its state is still a prefix of the stream.
        let mut walked = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        if walked.switches.len() < self.rules.len() && walked.at < end {
            walked.walk(blend, input, end);
        }
        walked.switches.clone()
    }

    /// The rules of a stream given switch by switch (a state's, [`Given`]): each set
    /// from its switch, the last for good. The first switch is at 0.
    pub fn of_given(given: &[Given]) -> Self {
        let rules = (given.iter())
            .map(|g| Rule {
                from: 0,
                period: rule_period(&g.weights),
                weights: g.weights.clone(),
            })
            .collect();
        let switches: Vec<Switch> = (given.iter().enumerate())
            .map(|(rule, g)| Switch {
                start: g.start,
                drawn: g.drawn.clone(),
                rule,
            })
            .collect();
        let last = switches.last().expect("a stream has a switch at 0");
        let walked = Walked {
            at: last.start,
            drawn: last.drawn.clone(),
            tokens: 0,
            switches,
        };
        Rules {
            rules,
            walked: Mutex::new(walked),
        }
    }

    /// The switches before `end`, as a state carries them.
    pub fn given(&self, switches: &[Switch], end: u128) -> Vec<Given> {
        (switches.iter())
            .take_while(|w| w.start == 0 || w.start < end)
            .map(|w| Given {
                start: w.start,
                drawn: w.drawn.clone(),
                weights: self.rules[w.rule].weights.clone(),
            })
            .collect()
    }

    /// The source of sample `i` under `switch` (the last at or before it), `drawn` of
    /// each source before `i`.
    pub fn source_at(&self, switch: &Switch, i: u128, drawn: &[u128]) -> usize {
        let rule = &self.rules[switch.rule];
        let (i, base) = (i - switch.start, &switch.drawn);
        match &rule.period {
            Some((q, shares)) => {
                let m = i / u128::from(*q);
                let local = |k: usize| (drawn[k] - base[k] - m * u128::from(shares[k])) as f64;
                draw_with(&rule.weights, (i - m * u128::from(*q)) as f64, local)
            }
            None => draw_with(&rule.weights, i as f64, |k| (drawn[k] - base[k]) as f64),
        }
    }

    /// Each source's draws before sample `i` under `switch` (the last at or before it):
    /// whole periods counted, the rest drawn.
    pub fn drawn_before(&self, switch: &Switch, i: u128) -> (u128, Vec<u128>) {
        match &self.rules[switch.rule].period {
            Some((q, shares)) => {
                let m = (i - switch.start) / u128::from(*q);
                let drawn = (switch.drawn.iter().zip(shares))
                    .map(|(&d, &s)| d + m * u128::from(s))
                    .collect();
                (switch.start + m * u128::from(*q), drawn)
            }
            None => (switch.start, switch.drawn.clone()),
        }
    }
}

impl Walked {
    /// Walks the stream to sample `end` or the last switch, counting each sample's tokens
    /// (its length, or its window's tokens) from its source's stream.
    fn walk(&mut self, blend: &Blend, (config, lengths): (&PlanConfig, &[u32]), end: u128) {
        let rules = &blend.rules;
        let mut cursors: Vec<Cursor> = (0..self.drawn.len()).map(|_| Cursor::default()).collect();
        while self.at < end && self.switches.len() < rules.rules.len() {
            let next = &rules.rules[self.switches.len()];
            if self.tokens >= u128::from(next.from) {
                self.switches.push(Switch {
                    start: self.at,
                    drawn: self.drawn.clone(),
                    rule: self.switches.len(),
                });
                continue;
            }
            let switch = self.switches.last().expect("the first switch is at 0");
            let k = rules.source_at(switch, self.at, &self.drawn);
            let tokens = cursors[k].tokens(blend, (config, lengths), k, self.drawn[k]);
            self.tokens += tokens as u128;
            self.drawn[k] += 1;
            self.at += 1;
        }
    }
}

/// One source's stream, an epoch of it at a time.
#[derive(Default)]
struct Cursor {
    /// The epoch held, where it starts in the stream, and its samples.
    epoch: Option<(u128, u128, SourceEpoch)>,
}

impl Cursor {
    /// The tokens of sample `j` of source `k`'s stream.
    fn tokens(
        &mut self,
        blend: &Blend,
        (config, lengths): (&PlanConfig, &[u32]),
        k: usize,
        j: u128,
    ) -> usize {
        loop {
            let (epoch, start) = match &self.epoch {
                Some((_, start, samples))
                    if (*start..start + samples.len() as u128).contains(&j) =>
                {
                    let first_row = blend.rows.part_rows(k).start;
                    return samples.tokens_of((j - start) as usize, lengths, first_row);
                }
                Some((e, start, samples)) if j >= *start => (e + 1, start + samples.len() as u128),
                _ => blend.epoch_of(config, k, j),
            };
            // A source's epochs count modulo 2^64 (past them, its orders repeat).
            let samples = blend.source_epoch(config, lengths, k, epoch as u64);
            self.epoch = Some((epoch, start, samples));
        }
    }
}
