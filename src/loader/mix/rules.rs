//! The weights a mixture draws by over its stream: one set, or a schedule whose sets take
//! over at the first sample at or past their points in tokens drawn. Each set's rule starts
//! afresh where it takes over (its counts from there), so every source stays within a
//! sample of its share of the samples drawn under each set.

use std::ops::Range;
use std::sync::Mutex;

use super::repack::Stretch;
use super::stream::{Given, Tail, Taken};
use super::{Blend, draw_with, rule_period};
use crate::loader::config::PlanConfig;
use crate::loader::pack::Packing;

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

/// The sets of weights, and where each took over as far as the stream has been walked
/// under each of the last few packings of the stream walked (a switch counts the tokens
/// drawn, which a window's packing sets). A stream taken over is its switches given, then
/// the schedules it went on by from where each was taken up.
#[derive(Debug)]
pub(super) struct Rules {
    pub rules: Vec<Rule>,
    /// The switches given (a state's), each to its set among `rules`.
    given: Vec<Switch>,
    /// Each schedule's first place and its sets among `rules`.
    tails: Vec<(u128, Range<usize>)>,
    /// The stream before any walk.
    unwalked: Walked,
    walked: Mutex<Vec<(Packs, Walked)>>,
}

/// A stream's packings (first place, packing).
type Packs = Vec<(u128, Packing)>;

/// The walks kept, one a packing of the stream.
const WALKS_KEPT: usize = 4;

/// The stream walked so far: the switches found, the next sample's place, each source's
/// draws and the tokens drawn before it, the switches given and schedules taken up so
/// far, and the next set of the schedule in force.
#[derive(Clone, Debug)]
struct Walked {
    switches: Vec<Switch>,
    at: u128,
    drawn: Vec<u128>,
    tokens: u128,
    given: usize,
    tails: usize,
    next: Option<usize>,
}

impl Rules {
    /// The rules of `points` (tokens, normalized weights), the first at 0, for `sources`.
    pub fn new(points: Vec<(u64, Vec<f64>)>, sources: usize) -> Self {
        let taken = Taken {
            given: Vec::new(),
            tails: vec![Tail { start: 0, points }],
        };
        Rules::of_taken(&taken, sources)
    }

    /// The rules of a stream taken over: its switches given (a state's, [`Given`]; the
    /// first at 0), each set from its switch, then each schedule from its first place.
    pub fn of_taken(taken: &Taken, sources: usize) -> Self {
        let rule = |from: u64, weights: &Vec<f64>| Rule {
            from,
            period: rule_period(weights),
            weights: weights.clone(),
        };
        let mut rules: Vec<Rule> = taken.given.iter().map(|g| rule(0, &g.weights)).collect();
        let given: Vec<Switch> = (taken.given.iter().enumerate())
            .map(|(rule, g)| Switch {
                start: g.start,
                drawn: g.drawn.clone(),
                rule,
            })
            .collect();
        let mut tails = Vec::with_capacity(taken.tails.len());
        for tail in &taken.tails {
            let first = rules.len();
            rules.extend(tail.points.iter().map(|(from, w)| rule(*from, w)));
            tails.push((tail.start, first..rules.len()));
        }
        let unwalked = Walked::unwalked(&given, tails.first(), sources);
        Rules {
            rules,
            given,
            tails,
            unwalked,
            walked: Mutex::new(Vec::new()),
        }
    }

    /// The switches of the samples before `end` (the stream walked that far first, packed
    /// as `blend` packs it).
    pub fn switches(&self, blend: &Blend, input: (&PlanConfig, &[u32]), end: u128) -> Vec<Switch> {
        if self.unwalked.done(self) {
            return self.unwalked.switches.clone();
        }
        let packs = blend.packs_key();
        // A poisoned lock held a walk cut short: its state is still a prefix of the stream.
        let mut walks = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        let i = match walks.iter().position(|(p, _)| *p == packs) {
            Some(i) => i,
            None => {
                if walks.len() == WALKS_KEPT {
                    walks.remove(0);
                }
                walks.push((packs, self.unwalked.clone()));
                walks.len() - 1
            }
        };
        let walked = &mut walks[i].1;
        if walked.at < end {
            walked.walk(blend, input, end);
        }
        walked.switches.clone()
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
    /// The stream before any walk: given throughout (nothing to walk); walked from the
    /// first switch given; or a schedule's from the start, its first set at 0.
    fn unwalked(given: &[Switch], tail: Option<&(u128, Range<usize>)>, sources: usize) -> Self {
        let first = given.first().cloned().unwrap_or_else(|| Switch {
            start: 0,
            drawn: vec![0; sources],
            rule: tail.map_or(0, |t| t.1.start),
        });
        let mut walked = Walked {
            at: 0,
            drawn: first.drawn.clone(),
            switches: vec![first],
            tokens: 0,
            given: 1,
            tails: 0,
            next: None,
        };
        match (given.last(), tail) {
            (Some(last), None) => {
                (walked.at, walked.drawn) = (last.start, last.drawn.clone());
                walked.switches = given.to_vec();
                walked.given = given.len();
            }
            (None, tail) => {
                walked.given = 0;
                walked.tails = 1;
                walked.next = tail.map(|t| t.1.start + 1);
            }
            (Some(_), Some(_)) => {}
        }
        walked
    }

    /// Whether every switch is found: the switches given and the schedules taken up,
    /// the last set of the last schedule in force.
    fn done(&self, rules: &Rules) -> bool {
        let last_set = |n: usize| {
            (self.tails.checked_sub(1))
                .and_then(|t| rules.tails.get(t))
                .is_none_or(|t| n >= t.1.end)
        };
        self.given == rules.given.len()
            && self.tails == rules.tails.len()
            && self.next.is_none_or(last_set)
    }

    /// Walks the stream to sample `end` or its last switch, counting each sample's tokens
    /// (its length, or its window's tokens at the packing in force) from its source's
    /// stream: a switch given at its place; a schedule taken up at its first place by its
    /// set at the tokens drawn there (the set in force going on when it has the same
    /// weights); the schedule's next set at the first sample at or past its point.
    fn walk(&mut self, blend: &Blend, (config, lengths): (&PlanConfig, &[u32]), end: u128) {
        let rules = &blend.rules;
        let mut stretches: Vec<Stretch> =
            (0..self.drawn.len()).map(|_| Stretch::default()).collect();
        while self.at < end && !self.done(rules) {
            if let Some(g) = rules.given.get(self.given).filter(|g| g.start == self.at) {
                self.drawn.clone_from(&g.drawn);
                self.switches.push(g.clone());
                self.given += 1;
                continue;
            }
            if let Some((_, sets)) = rules.tails.get(self.tails).filter(|t| t.0 == self.at) {
                let r = self.due(rules, sets);
                let in_force = self.switches.last().map(|w| &rules.rules[w.rule].weights);
                if in_force != Some(&rules.rules[r].weights) {
                    self.switch(r);
                }
                (self.tails, self.next) = (self.tails + 1, Some(r + 1));
                continue;
            }
            // The next set's point reached: the last set due (a sample past several points
            // switches once, to the last).
            let reached = |n: &usize| {
                (rules.rules.get(*n)).is_some_and(|r| self.tokens >= u128::from(r.from))
            };
            if let Some(n) = self.next.filter(reached) {
                let sets = &rules.tails[self.tails - 1].1;
                if sets.contains(&n) {
                    let due = self.due(rules, &(n..sets.end));
                    self.switch(due);
                    self.next = Some(due + 1);
                    continue;
                }
            }
            let switch = self.switches.last().expect("the first switch is at 0");
            let k = rules.source_at(switch, self.at, &self.drawn);
            let tokens = blend.draw_tokens((config, lengths), k, self.drawn[k], &mut stretches[k]);
            self.tokens += tokens as u128;
            self.drawn[k] += 1;
            self.at += 1;
        }
    }

    /// The last of `sets` (the first due) whose point the tokens drawn have reached.
    fn due(&self, rules: &Rules, sets: &Range<usize>) -> usize {
        let reached = |r: &Rule| u128::from(r.from) <= self.tokens;
        sets.start + rules.rules[sets.clone()].partition_point(reached).max(1) - 1
    }

    /// Set `rule` takes over at the next sample.
    fn switch(&mut self, rule: usize) {
        self.switches.push(Switch {
            start: self.at,
            drawn: self.drawn.clone(),
            rule,
        });
    }
}
