//! An epoch planned in parts: the batches a saved state's loader read, under its options,
//! then the rest of the epoch under this loader's, and with a schedule under each value
//! from the global step it takes over. Each part is planned over what the parts before it
//! left: samples in the epoch's order, or (packed) the tokens no window read.
//!
//! ```text
//! order ──plan(A)──▶ A's first a batches ─┐
//!   └─ unread ──plan(B)──▶ B's first b batches ─┐
//!        └─ unread ──plan(C)──▶ all of C's ──────┴──▶ one plan: a + b + c batches
//! ```

use std::sync::Arc;

use super::config::PlanConfig;
use super::mix::Stream;
use super::order::{Rows, epoch_order};
use super::pack::{Docs, Packing, Windows, window_order};
use super::plan::{Costs, Plan};
use super::remix::Remixer;
use super::schedule::Schedules;
use super::store::PlanInputs;

/// Where each part of an epoch's plan starts and the options it was planned under.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Parts {
    /// (first batch, options as every rank has them), in order; the first starts at 0.
    pub starts: Vec<(usize, PlanConfig)>,
    /// Where this loader's own parts start: the batches before were read under a saved
    /// state's options.
    pub own: usize,
    /// Global tokens read before the epoch, when known.
    pub tokens_before: Option<u64>,
    /// A mixture's stream to the epoch's end.
    pub mixture: Option<Stream>,
    /// One past the last place of the epoch's order the batches before this loader's own
    /// hold.
    pub read_end: usize,
    /// Where a packed mixture's parts packed its stream anew within the epoch: (place of
    /// the epoch, packing), in order.
    pub repacks: Vec<(usize, Packing)>,
}

impl Parts {
    /// The parts read before batch `end`: each part's options and where it ends.
    pub fn read_before(&self, end: usize) -> Vec<(PlanConfig, usize)> {
        let mut read = Vec::new();
        for (i, (start, config)) in self.starts.iter().enumerate() {
            if *start >= end {
                break;
            }
            let next = self.starts.get(i + 1).map_or(end, |(s, _)| (*s).min(end));
            read.push((config.clone(), next));
        }
        read
    }
}

/// What an epoch's parts are planned over, place by place.
pub(crate) enum Epoch {
    /// The row at each place of the epoch's order (a mixture's draws: a row of a source
    /// that repeats within the epoch stands at more than one place).
    Rows(Vec<usize>),
    /// The rows of the epoch's order, their documents packed by each part (a packed
    /// loader over one dataset).
    Docs(Vec<usize>),
    /// A packed mixture's windows, one at each place, in the order drawn: every part
    /// packs as they were packed.
    Windows(Arc<Windows>),
}

impl Epoch {
    /// The epoch `epoch` of a loader over one dataset, in the order of `base`'s shuffle.
    pub(crate) fn of_dataset(base: &PlanConfig, inputs: &PlanInputs, epoch: u64) -> Epoch {
        let lengths = &inputs.lengths[..];
        let order = epoch_order::<usize>(
            base.shuffle,
            lengths.len(),
            &inputs.rows,
            &inputs.shards,
            epoch,
        );
        match base.packing {
            Some(_) => Epoch::Docs(order),
            None => Epoch::Rows(order),
        }
    }
}

/// What stands at the epoch's places, for the parts planned over them.
enum Places {
    /// Rows, and their lengths, by place.
    Rows(Vec<usize>, Vec<u32>),
    /// Windows, by place.
    Windows(Arc<Windows>),
}

impl Places {
    fn len(&self) -> usize {
        match self {
            Places::Rows(rows, _) => rows.len(),
            Places::Windows(windows) => windows.len(),
        }
    }
}

/// What the epoch has left to plan.
enum Left<'a> {
    /// Places no part read, in the epoch's order, and what stands at them.
    Places(Vec<usize>, Arc<Places>),
    /// Documents or pieces of them, in the order packing takes them.
    Docs(Docs<'a>),
}

/// The plan of `epoch`: the first batches of each of `read` (options, and where it ended
/// in the epoch's plan), then the rest under `base`'s options with `schedules`' values at
/// the global tokens read (from `tokens_before` at the epoch's start). The epoch's places
/// are `items`, each from the part it is given with on (a mixture's weights changed at a
/// resume draw the places no read batch reached anew; the places before keep their rows;
/// a packed mixture's part that packs otherwise than its stream where it starts draws them
/// anew by `remix`). `None` when a part of `read` does not have the batches it says it
/// ended at.
pub(crate) fn plan(
    read: &[(PlanConfig, usize)],
    (base, schedules): (&PlanConfig, &Schedules),
    tokens_before: u64,
    (items, lengths, remix): (Vec<(usize, Epoch)>, &[u32], Option<&Remixer<'_>>),
    epoch: u64,
) -> Option<Plan> {
    let items: Vec<(usize, Result<Arc<Places>, Docs>)> = (items.into_iter())
        .map(|(from, items)| {
            let places = match items {
                Epoch::Docs(order) => Err(Docs::whole(Rows::Wide(order), lengths)),
                Epoch::Rows(rows) => {
                    let lens = rows.iter().map(|&r| lengths[r]).collect();
                    Ok(Arc::new(Places::Rows(rows, lens)))
                }
                Epoch::Windows(windows) => Ok(Arc::new(Places::Windows(windows))),
            };
            (from, places)
        })
        .collect();
    let mut left = match &items.first().expect("the epoch's places").1 {
        Ok(places) => Left::Places((0..places.len()).collect(), places.clone()),
        Err(docs) => Left::Docs(docs.clone()),
    };
    let mut out = Joined::new(epoch);
    for (i, (config, end)) in read.iter().enumerate() {
        let (given, fresh) = places_of(&items, i, left);
        left = out.remixed(remix, (i, config), given, fresh);
        let part = plan_left(config, &left, epoch);
        let take = end.checked_sub(out.infos.len())?;
        if take > part.len() {
            return None;
        }
        left = out.push(part, take, config, left);
    }
    let (given, mut fresh) = places_of(&items, read.len(), left);
    left = given;
    out.read_end = out.places_end;
    out.own = out.infos.len();
    let mut tokens = tokens_before.saturating_add(out.tokens);
    loop {
        let config = schedules.config_at(base, tokens);
        left = out.remixed(remix, (read.len(), &config), left, fresh);
        fresh = false;
        let part = plan_left(&config, &left, epoch);
        let take = match schedules.next_point(tokens) {
            Some(point) => steps_before(&part, config.ranks.turn().1, point - tokens),
            None => part.len(),
        };
        let whole = take == part.len();
        let before = out.tokens;
        left = out.push(part, take, &config, left);
        tokens = tokens.saturating_add(out.tokens - before);
        if whole || take == 0 {
            break;
        }
    }
    Some(out.into_plan(tokens_before))
}

/// What `left` leaves at the places of part `i`: those given at `i` (after the first), if
/// any, and whether there are. Places given anew differ from those before only from the
/// first that no part read on (a packed mixture packed again there may have more or
/// fewer): the unread places before them are left, and all from there.
fn places_of<'a>(
    items: &[(usize, Result<Arc<Places>, Docs<'a>>)],
    i: usize,
    left: Left<'a>,
) -> (Left<'a>, bool) {
    // Places given before `i` stand already (a packed mixture's drawn anew, maybe).
    let given = (items.iter()).find(|(from, _)| *from == i && i > 0);
    match (given.map(|(_, p)| p), left) {
        (Some(Ok(places)), Left::Places(left, before)) => {
            let left = anew(left, before.len(), places.len());
            (Left::Places(left, places.clone()), true)
        }
        (_, left) => (left, false),
    }
}

/// `left`, places no part read of `old` places, among `new` places given anew from the
/// first that no part read on.
fn anew(mut left: Vec<usize>, old: usize, new: usize) -> Vec<usize> {
    if old != new {
        left.retain(|&p| p < new);
        left.extend(old..new);
    }
    left
}

/// The batches of `part` in the steps of `world` batches that start before `tokens` more
/// are read: a scheduled value takes over at the first step at or past its point.
fn steps_before(part: &Plan, world: usize, tokens: u64) -> usize {
    let (mut end, mut read) = (0, 0u64);
    while end < part.len() && read < tokens {
        let step_end = (end + world.max(1)).min(part.len());
        read += part.infos[end..step_end]
            .iter()
            .map(|i| i.tokens as u64)
            .sum::<u64>();
        end = step_end;
    }
    end
}

/// The plan of what is left under `config`. Every part of a packed epoch packs (a state
/// whose parts do not is refused when it is restored); a packed mixture's parts plan the
/// windows its stream drew (each part's, packed at its packing from where it took over).
fn plan_left(config: &PlanConfig, left: &Left<'_>, epoch: u64) -> Plan {
    match left {
        Left::Places(left, places) => match &**places {
            Places::Rows(_, lens) => {
                let costs = Costs::Lengths(config.weight());
                Plan::of_ranks(config, (&lens[..], &costs), left, epoch)
            }
            Places::Windows(windows) => {
                (windows.plan_of(config, left, epoch)).with_windows(windows.clone())
            }
        },
        Left::Docs(docs) => {
            let packing = (config.packing.as_ref())
                .expect("every part of a packed epoch packs: Loader::restore refuses others");
            let windows = Windows::of_docs(packing, docs.clone());
            let order = window_order::<usize>(config, windows.len(), epoch);
            windows.plan(config, &order, epoch)
        }
    }
}

/// Parts' batches put together.
struct Joined {
    plan: Plan,
    infos: Vec<super::BatchInfo>,
    /// Windows read by each packed part, by number in its windows.
    windows: Vec<(Arc<Windows>, Vec<usize>)>,
    starts: Vec<(usize, PlanConfig)>,
    own: usize,
    tokens: u64,
    repacks: Vec<(usize, Packing)>,
    /// One past the last place the batches so far hold, and those before this loader's.
    places_end: usize,
    read_end: usize,
}

impl Joined {
    fn new(epoch: u64) -> Self {
        Joined {
            plan: Plan::empty(epoch),
            infos: Vec::new(),
            windows: Vec::new(),
            starts: Vec::new(),
            own: 0,
            tokens: 0,
            repacks: Vec::new(),
            places_end: 0,
            read_end: 0,
        }
    }

    /// Appends the first `take` batches of `part` (planned under `config`), and returns
    /// what `left` leaves after them.
    fn push<'a>(
        &mut self,
        part: Plan,
        take: usize,
        config: &PlanConfig,
        left: Left<'a>,
    ) -> Left<'a> {
        let end = take.checked_sub(1).map_or(0, |last| part.infos[last].end);
        let offset = self.plan.samples.len();
        self.starts.push((self.infos.len(), config.of_every_rank()));
        for info in &part.infos[..take] {
            self.tokens += info.tokens as u64;
            self.infos.push(super::BatchInfo {
                start: offset + info.start,
                end: offset + info.end,
                ..*info
            });
        }
        self.plan.costs.extend_from_slice(&part.costs[..take]);
        if take == part.len() {
            self.plan.dropped += part.dropped;
        }
        let read = &part.samples[..end];
        let docs = match left {
            Left::Places(left, places) => {
                match &*places {
                    Places::Rows(rows, _) => {
                        self.plan.samples.extend(read.iter().map(|&p| rows[p]))
                    }
                    Places::Windows(windows) => self.push_windows(windows, read),
                }
                let mut was_read = vec![false; places.len()];
                read.iter().for_each(|&p| was_read[p] = true);
                self.places_end = (read.iter().map(|&p| p + 1)).fold(self.places_end, usize::max);
                let left = left.into_iter().filter(|&p| !was_read[p]).collect();
                return Left::Places(left, places);
            }
            Left::Docs(docs) => docs,
        };
        let windows = (part.windows.as_ref()).expect("a part of documents packs: plan_left");
        let mut was_read = vec![false; windows.len()];
        read.iter().for_each(|&w| was_read[w] = true);
        let rest = windows.unread(docs.lengths, |w| was_read[w]);
        self.push_windows(windows, read);
        Left::Docs(rest)
    }

    /// `left`, a packed mixture's places drawn anew from the first no part read when part
    /// `part`, under `config`, packs otherwise than the stream there (or, its places
    /// `fresh`ly given, as the parts before packed it anew).
    fn remixed<'a>(
        &mut self,
        remix: Option<&Remixer<'_>>,
        (part, config): (usize, &PlanConfig),
        left: Left<'a>,
        fresh: bool,
    ) -> Left<'a> {
        let (Some(remix), Some(packing), Left::Places(unread, before)) =
            (remix, config.packing, &left)
        else {
            return left;
        };
        let at = self.places_end;
        let switch = remix.packing_at(&self.repacks, at) != Some(packing);
        if switch {
            self.repacks.push((at, packing));
        } else if !fresh || self.repacks.is_empty() {
            return left;
        }
        let places = Arc::new(Places::Windows(remix.windows(part, &self.repacks)));
        Left::Places(anew(unread.clone(), before.len(), places.len()), places)
    }

    /// Appends windows `read` of `windows`, numbered on from those before.
    fn push_windows(&mut self, windows: &Arc<Windows>, read: &[usize]) {
        let numbered = self.windows.iter().map(|(_, ids)| ids.len()).sum::<usize>();
        self.plan.samples.extend(numbered..numbered + read.len());
        self.windows.push((windows.clone(), read.to_vec()));
    }

    /// The plan put together, packed windows of every part joined.
    fn into_plan(mut self, tokens_before: u64) -> Plan {
        self.plan.infos = self.infos;
        if !self.windows.is_empty() {
            let parts: Vec<(&Windows, &[usize])> = (self.windows.iter())
                .map(|(w, ids)| (&**w, &ids[..]))
                .collect();
            self.plan.windows = Some(Arc::new(Windows::joined(&parts)));
        }
        self.plan.parts = Parts {
            starts: self.starts,
            own: self.own,
            tokens_before: Some(tokens_before),
            mixture: None,
            read_end: self.read_end,
            repacks: self.repacks,
        };
        self.plan
    }
}
/// Global tokens `plan`'s batches give when read (ranks taking turns): all of them, or
/// with `drop_last` those of whole steps of this loader's.
pub(crate) fn read_tokens(plan: &Plan, config: &PlanConfig) -> u64 {
    let world = config.ranks.turn().1.max(1);
    let own = plan.parts.own;
    let end = match config.drop_last {
        true => own + (plan.len() - own) / world * world,
        false => plan.len(),
    };
    plan.infos()[..end].iter().map(|i| i.tokens as u64).sum()
}

#[cfg(test)]
mod mixtures;
#[cfg(test)]
mod repacked;
#[cfg(test)]
mod rescheduled;
#[cfg(test)]
mod tests;
