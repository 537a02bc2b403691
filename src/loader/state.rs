//! A loader's state: its [`Position`], and what a loader built with other options needs to
//! go on from it — the options each part of the epoch so far was read under, and the
//! global tokens read before the epoch — as JSON that bounds what it asks of the reader.

use serde_json::{Value, json};

use super::config::{Balance, BatchSize, PlanConfig, Ranks, Shuffle};
use super::mix::{Change, Given, Stream};
use super::pack::{Overlong, PackMode, Packing};
use super::position::Position;
use crate::error::{ArgumentError, Error, Result};

/// Parts a state may hold: an epoch changed this many times at most.
const MAX_PARTS: usize = 1024;
/// Ranks a state's options may have: a plan of a part allocates per rank.
const MAX_WORLD: usize = 1 << 20;

/// Where a loader stands and what made the batches it read in the epoch so far: a
/// loader built with other options (batch size or token budget, pack length, balance,
/// world size, workers; a mixture's weights) goes on from it without reading a sample
/// (packed: a token) twice or leaving one out ([`Loader::restore`](super::Loader::restore)).
///
/// # Example
/// ```
/// # use lodtensor::MappedDataset;
/// # let (dir, path) = lodtensor::doc_fixtures::file()?;
/// # let file = MappedDataset::open(&path)?;
/// use lodtensor::loader::{Loader, LoaderState};
/// let mut first = Loader::builder(&file).with_batch_size(2).elastic_shard(0, 1).build()?;
/// let saved = first.next_batch()?.expect("a batch").next_state().to_json();   // read 0, 1
/// let mut other = Loader::builder(&file).with_batch_size(3).elastic_shard(0, 1).build()?;
/// other.restore(&LoaderState::from_json(&saved)?)?;
/// assert_eq!(other.next_batch()?.expect("the rest").samples(), &[2, 3, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LoaderState {
    position: Position,
    /// The epoch's parts read so far: options, and where each ended.
    pub(super) read: Vec<(PlanConfig, usize)>,
    pub(super) tokens_before: Option<u64>,
    /// A mixture's stream over the epoch.
    pub(super) mixture: Option<Stream>,
}

impl LoaderState {
    pub(super) fn new(
        position: Position,
        read: Vec<(PlanConfig, usize)>,
        tokens_before: Option<u64>,
        mixture: Option<Stream>,
    ) -> Self {
        LoaderState {
            position,
            read,
            tokens_before,
            mixture,
        }
    }

    /// The position: the next batch.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// let loader = Loader::builder(&file).build()?;
    /// assert_eq!(loader.state().position(), loader.next_position());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> Position {
        self.position
    }

    /// The state as JSON: the [`Position::to_json`] keys, and `"parts"` (each part's
    /// options and the batch it ended at: the first part's `"options"` whole, each later
    /// one's as the keys that `"changed"`, a removed one null, so that a schedule's switch
    /// adds a few dozen bytes), `"tokens_before"` (global tokens read before
    /// the epoch; absent when not known) and a mixture's `"mixture"` (its sources' hash,
    /// its stream's switches to the epoch's end, the changes of weights within it, and a
    /// packed mixture's `"packs"`: where each packing took over).
    /// `docs/design.md` lists the keys.
    ///
    /// # Example
    /// ```
    /// # use lodtensor::MappedDataset;
    /// # let (dir, path) = lodtensor::doc_fixtures::file()?;
    /// # let file = MappedDataset::open(&path)?;
    /// use lodtensor::Loader;
    /// use lodtensor::loader::LoaderState;
    /// let mut loader = Loader::builder(&file).with_batch_size(2).elastic_shard(0, 1).build()?;
    /// let state = loader.next_batch()?.expect("a batch").next_state();
    /// assert!(state.to_json().contains(r#""parts":[{"end":1,"options":{"#));
    /// assert_eq!(LoaderState::from_json(&state.to_json())?, state);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_json(&self) -> String {
        let mut v: Value =
            serde_json::from_str(&self.position.to_json()).expect("a position's JSON parses");
        let mut parts = Vec::with_capacity(self.read.len());
        let mut before: Option<Value> = None;
        for (config, end) in &self.read {
            let options = config_json(config);
            parts.push(match &before {
                None => json!({"options": options, "end": end}),
                Some(b) => json!({"changed": changed(b, &options), "end": end}),
            });
            before = Some(options);
        }
        v["parts"] = Value::Array(parts);
        if let Some(t) = self.tokens_before {
            v["tokens_before"] = json!(t);
        }
        if let Some(stream) = &self.mixture {
            v["mixture"] = stream_json(stream);
        }
        v.to_string()
    }

    /// A state from [`LoaderState::to_json`], or a position's JSON ([`Position::to_json`]:
    /// then without parts, so it resumes only on a loader that makes the same plans).
    ///
    /// # Errors
    /// [`ArgumentError::InvalidPosition`] for anything else, naming the key; options out
    /// of range as [`ArgumentError::LoaderConfig`] names them.
    ///
    /// # Example
    /// ```
    /// use lodtensor::loader::LoaderState;
    /// assert!(LoaderState::from_json(r#"{"epoch": 0, "batch": 2, "parts": 7}"#).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self> {
        let position = Position::from_json(text)?;
        let bad = |reason: String| -> Error {
            ArgumentError::InvalidPosition {
                json: crate::error::elided(text),
                reason,
            }
            .into()
        };
        let v: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let parts = match &v["parts"] {
            Value::Null => &[][..],
            Value::Array(parts) if parts.len() <= MAX_PARTS => &parts[..],
            Value::Array(parts) => {
                return Err(bad(format!("{} parts: at most {MAX_PARTS}", parts.len())));
            }
            _ => return Err(bad("\"parts\" is not a list".into())),
        };
        let mut read = Vec::with_capacity(parts.len());
        let mut before: Option<Value> = None;
        for (i, part) in parts.iter().enumerate() {
            let end = part["end"].as_u64().and_then(|e| usize::try_from(e).ok());
            let end = end
                .ok_or_else(|| bad(format!("\"parts\"[{i}].\"end\" is not an unsigned integer")))?;
            let options = options_of(part, before.as_ref())
                .map_err(|key| bad(format!("\"parts\"[{i}]: {key}")))?;
            let config = config_of(&options)
                .map_err(|key| bad(format!("\"parts\"[{i}].\"options\": {key}")))?;
            before = Some(options);
            config.validate()?;
            read.push((config, end));
        }
        if read.windows(2).any(|p| p[1].1 <= p[0].1)
            || read.last().is_some_and(|(_, end)| *end != position.batch)
        {
            return Err(bad("the parts' ends must increase up to \"batch\"".into()));
        }
        let tokens_before = match &v["tokens_before"] {
            Value::Null => None,
            t => Some(
                t.as_u64()
                    .ok_or_else(|| bad("\"tokens_before\" is not an unsigned integer".into()))?,
            ),
        };
        let mixture = match &v["mixture"] {
            Value::Null => None,
            m => Some(stream_of(m).map_err(|key| bad(format!("\"mixture\": {key}")))?),
        };
        Ok(LoaderState {
            position,
            read,
            tokens_before,
            mixture,
        })
    }
}

/// A mixture's stream as JSON: its sources' hash, and each switch's first sample, the
/// draws of every source before it (decimal, comma-separated) and its weights.
fn stream_json(stream: &Stream) -> Value {
    let switches: Vec<Value> = (stream.switches.iter())
        .map(|g| {
            let drawn: Vec<String> = g.drawn.iter().map(u128::to_string).collect();
            json!({"start": g.start.to_string(), "drawn": drawn.join(","), "weights": g.weights})
        })
        .collect();
    let mut v = json!({"sources": format!("{:016x}", stream.sources), "switches": switches});
    if !stream.changes.is_empty() {
        let changes: Vec<Value> = (stream.changes.iter())
            .map(|c| {
                let mut v =
                    json!({"part": c.part, "start": c.start.to_string(), "weights": c.weights});
                if !c.later.is_empty() {
                    let later: Vec<Value> = (c.later.iter())
                        .map(|(from, w)| json!({"tokens": from.to_string(), "weights": w}))
                        .collect();
                    v["later"] = Value::Array(later);
                }
                v
            })
            .collect();
        v["changes"] = Value::Array(changes);
    }
    if !stream.packs.is_empty() {
        let packs: Vec<Value> = (stream.packs.iter())
            .map(|(start, p)| json!({"start": start.to_string(), "pack": pack_json(p)}))
            .collect();
        v["packs"] = Value::Array(packs);
    }
    v
}

/// Positive, finite weights, one to [`MAX_WORLD`] of them.
fn weights_of(w: &Value) -> Option<Vec<f64>> {
    (w.as_array())
        .filter(|w| !w.is_empty() && w.len() <= MAX_WORLD)
        .and_then(|w| w.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
        .filter(|w| w.iter().all(|x| x.is_finite() && *x > 0.0))
}

/// A change's later sets of weights: none (no key), or a list of at most [`MAX_PARTS`]
/// points, tokens as a decimal string.
fn later_of(v: &Value) -> Option<Vec<(u64, Vec<f64>)>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(points) if points.len() <= MAX_PARTS => (points.iter())
            .map(|p| {
                let tokens = p["tokens"].as_str()?.parse::<u64>().ok()?;
                Some((tokens, weights_of(&p["weights"])?))
            })
            .collect(),
        _ => None,
    }
}

/// A mixture's stream from [`stream_json`]; the key that is wrong otherwise.
fn stream_of(m: &Value) -> std::result::Result<Stream, String> {
    let sources = (m["sources"].as_str())
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or("\"sources\" is not a hex string")?;
    let switches = (m["switches"].as_array())
        .filter(|s| !s.is_empty() && s.len() <= MAX_PARTS)
        .ok_or(format!("\"switches\" is not a list of 1 to {MAX_PARTS}"))?;
    let decimal = |s: &str| s.parse::<u128>().ok();
    let mut out = Vec::with_capacity(switches.len());
    for (i, g) in switches.iter().enumerate() {
        let bad = |key: &str| format!("\"switches\"[{i}].\"{key}\" is not as written");
        let start = (g["start"].as_str())
            .and_then(decimal)
            .ok_or_else(|| bad("start"))?;
        let weights = weights_of(&g["weights"]).ok_or_else(|| bad("weights"))?;
        let drawn = (g["drawn"].as_str())
            .filter(|d| d.len() <= 40 * weights.len())
            .and_then(|d| d.split(',').map(decimal).collect::<Option<Vec<u128>>>())
            .filter(|d| d.len() == weights.len())
            .ok_or_else(|| bad("drawn"))?;
        out.push(Given {
            start,
            drawn,
            weights,
        });
    }
    if out.windows(2).any(|p| p[1].start <= p[0].start) {
        return Err("the switches' starts must increase".into());
    }
    let changes = match &m["changes"] {
        Value::Null => &[][..],
        Value::Array(c) if c.len() <= MAX_PARTS => &c[..],
        _ => return Err(format!("\"changes\" is not a list of at most {MAX_PARTS}")),
    };
    let changes = (changes.iter().enumerate())
        .map(|(i, c)| {
            let bad = |key: &str| format!("\"changes\"[{i}].\"{key}\" is not as written");
            Ok(Change {
                part: uint(c, "part")?,
                start: (c["start"].as_str())
                    .and_then(decimal)
                    .ok_or_else(|| bad("start"))?,
                weights: weights_of(&c["weights"]).ok_or_else(|| bad("weights"))?,
                later: later_of(&c["later"]).ok_or_else(|| bad("later"))?,
            })
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let packs = match &m["packs"] {
        Value::Null => &[][..],
        Value::Array(p) if p.len() <= MAX_PARTS => &p[..],
        _ => return Err(format!("\"packs\" is not a list of at most {MAX_PARTS}")),
    };
    let packs = (packs.iter().enumerate())
        .map(|(i, r)| {
            let bad = |key: &str| format!("\"packs\"[{i}].\"{key}\" is not as written");
            let start = (r["start"].as_str()).and_then(decimal);
            Ok((
                start.ok_or_else(|| bad("start"))?,
                packing_of(&r["pack"])?.ok_or_else(|| bad("pack"))?,
            ))
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(Stream {
        sources,
        switches: out,
        changes,
        packs,
    })
}

/// The keys of `options` whose values differ from `before`'s (a part's options after the
/// first are written as what changed: a schedule's switch is a key or two), a key `before`
/// has and `options` not as null.
fn changed(before: &Value, options: &Value) -> Value {
    let (Some(b), Some(o)) = (before.as_object(), options.as_object()) else {
        return options.clone();
    };
    let mut diff: serde_json::Map<String, Value> = (o.iter())
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for k in b.keys().filter(|k| !o.contains_key(*k)) {
        diff.insert(k.clone(), Value::Null);
    }
    Value::Object(diff)
}

/// A part's whole options: its `"options"`, or the part before's with its `"changed"`
/// keys set (a null one removed); the key that is wrong otherwise.
fn options_of(part: &Value, before: Option<&Value>) -> std::result::Result<Value, String> {
    match (&part["options"], &part["changed"], before) {
        (Value::Object(_), Value::Null, _) => Ok(part["options"].clone()),
        (Value::Null, Value::Object(diff), Some(Value::Object(b))) => {
            let mut options = b.clone();
            for (k, v) in diff {
                match v {
                    Value::Null => options.remove(k),
                    v => options.insert(k.clone(), v.clone()),
                };
            }
            Ok(Value::Object(options))
        }
        _ => Err(
            "one of \"options\" (an object) and, after the first part, \"changed\" is needed"
                .into(),
        ),
    }
}

/// A part's options as JSON (ranks take turns in every part a state holds).
fn config_json(c: &PlanConfig) -> Value {
    let (key, n) = match c.batch {
        BatchSize::Samples(n) => ("batch_size", n),
        BatchSize::Tokens(n) => ("token_budget", n),
    };
    let shuffle = match c.shuffle {
        Shuffle::None => json!({"kind": "none"}),
        Shuffle::Samples { seed } => json!({"kind": "samples", "seed": format!("{seed:x}")}),
        Shuffle::Chunks { seed, rows } => {
            json!({"kind": "chunks", "seed": format!("{seed:x}"), "rows": rows})
        }
        Shuffle::Windowed { seed, rows, window } => {
            json!({"kind": "windowed", "seed": format!("{seed:x}"), "rows": rows, "window": window})
        }
    };
    let (world, group) = match c.ranks {
        Ranks::Turns { world, group, .. } => (world, group),
        Ranks::Parts { world, .. } => (world, 0),
    };
    let pack = c.packing.as_ref().map(pack_json);
    let balance = c
        .balance
        .map(|b| json!({"weight": b.weight(), "lookahead": c.balance_lookahead}));
    json!({
        key: n,
        "drop_last": c.drop_last,
        "shuffle": shuffle,
        "buckets": c.buckets,
        "world": world,
        "group": group,
        "pack": pack,
        "balance": balance,
    })
}

/// A packing as JSON: its length, extra token and mode.
fn pack_json(p: &Packing) -> Value {
    let mode = match p.mode() {
        PackMode::Split { pad_last } => json!({"split": true, "pad_last": pad_last}),
        PackMode::BestFit {
            lookahead,
            overlong,
        } => {
            json!({"split": false, "lookahead": lookahead, "drop_overlong": overlong == Overlong::Drop})
        }
    };
    json!({"seq_len": p.seq_len(), "extra_token": p.extra_token(), "mode": mode})
}

/// A part's options from [`config_json`]; the key that is wrong otherwise.
fn config_of(v: &Value) -> std::result::Result<PlanConfig, String> {
    let batch = match (v.get("batch_size"), v.get("token_budget")) {
        (Some(_), None) => BatchSize::Samples(uint(v, "batch_size")?),
        (None, Some(_)) => BatchSize::Tokens(uint(v, "token_budget")?),
        _ => return Err("one of \"batch_size\" and \"token_budget\" is needed".into()),
    };
    let buckets = (v["buckets"].as_array())
        .filter(|b| b.len() <= MAX_WORLD)
        .ok_or("\"buckets\" is not a list")?
        .iter()
        .map(|b| b.as_u64().and_then(|b| usize::try_from(b).ok()))
        .collect::<Option<Vec<usize>>>()
        .ok_or("\"buckets\" holds other than unsigned integers")?;
    let (world, group) = (uint(v, "world")?, uint(v, "group")?);
    if world > MAX_WORLD || group == 0 {
        return Err(format!(
            "\"world\" {world} and \"group\" {group}: ranks taking turns, at most {MAX_WORLD}"
        ));
    }
    let (balance, balance_lookahead) = match &v["balance"] {
        Value::Null => (None, super::config::BALANCE_LOOKAHEAD),
        b => {
            let weight = (b["weight"].as_f64()).ok_or("\"balance\".\"weight\" is not a number")?;
            let balance = match weight == 0.0 {
                true => Balance::Tokens,
                false => Balance::Attention { weight },
            };
            (Some(balance), uint(b, "lookahead")?)
        }
    };
    Ok(PlanConfig {
        batch,
        drop_last: flag(v, "drop_last")?,
        shuffle: shuffle_of(&v["shuffle"])?,
        buckets,
        ranks: Ranks::Turns {
            rank: 0,
            world,
            group,
        },
        packing: packing_of(&v["pack"])?,
        balance,
        balance_lookahead,
    })
}

/// The shuffle of [`config_json`].
fn shuffle_of(s: &Value) -> std::result::Result<Shuffle, String> {
    let seed = || {
        (s["seed"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h, 16).ok()))
        .ok_or_else(|| "\"shuffle\".\"seed\" is not a hex string".to_owned())
    };
    Ok(match s["kind"].as_str() {
        Some("none") => Shuffle::None,
        Some("samples") => Shuffle::Samples { seed: seed()? },
        Some("chunks") => Shuffle::Chunks {
            seed: seed()?,
            rows: uint(s, "rows")?,
        },
        Some("windowed") => Shuffle::Windowed {
            seed: seed()?,
            rows: uint(s, "rows")?,
            window: uint(s, "window")?,
        },
        _ => return Err("\"shuffle\".\"kind\" is not none, samples, chunks or windowed".into()),
    })
}

/// The packing of [`config_json`] (`null`: none).
fn packing_of(p: &Value) -> std::result::Result<Option<Packing>, String> {
    if p.is_null() {
        return Ok(None);
    }
    let m = &p["mode"];
    let mode = match flag(m, "split")? {
        true => PackMode::Split {
            pad_last: flag(m, "pad_last")?,
        },
        false => PackMode::BestFit {
            lookahead: uint(m, "lookahead")?,
            overlong: match flag(m, "drop_overlong")? {
                true => Overlong::Drop,
                false => Overlong::Cut,
            },
        },
    };
    let packing = Packing::new(uint(p, "seq_len")?).with_extra_token(flag(p, "extra_token")?);
    Ok(Some(packing.with_mode(mode)))
}

/// `v[key]` as a `usize`.
fn uint(v: &Value, key: &str) -> std::result::Result<usize, String> {
    (v[key].as_u64().and_then(|n| usize::try_from(n).ok()))
        .ok_or_else(|| format!("\"{key}\" is not an unsigned integer"))
}

/// `v[key]` as a `bool`.
fn flag(v: &Value, key: &str) -> std::result::Result<bool, String> {
    v[key]
        .as_bool()
        .ok_or_else(|| format!("\"{key}\" is not true or false"))
}
