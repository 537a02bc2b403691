//! The fast path of [`Tokenizer::encode_batch`](super::Tokenizer::encode_batch) for
//! byte-level BPE tokenizers (GPT-2, RoBERTa, Llama 3 and their kind).
//!
//! `tokenizers`' own `encode_batch_fast` builds, for every document, a `PreTokenizedString`
//! of `NormalizedString`s with their alignments, a `String` per pre-token and per token, and
//! an `Encoding`; and its BPE cache is one map behind a lock. The ids need none of that:
//!
//! ```text
//! text ──pre-tokenizer's regex (the crate's SysRegex)──▶ pieces (byte ranges of the text)
//!      ──per-thread cache, else BPE merges by rank over the piece's bytes──▶ ids
//! ```
//!
//! It reproduces `encode_batch_fast(texts, false)` id for id, and is taken only when the
//! tokenizer is one it reproduces exactly ([`ByteBpe::new`] says why not otherwise):
//!
//! - no normalizer, no truncation, no padding;
//! - pre-tokenizer `ByteLevel { add_prefix_space: false, use_regex: true }`, or a `Sequence` of
//!   `Split { pattern: Regex, behavior: Isolated, invert: false }` and
//!   `ByteLevel { add_prefix_space: false, use_regex: false }` (Llama 3);
//! - model BPE without dropout, unknown token, byte fallback, non-empty subword prefix or word
//!   suffix, with a token for each of the 256 bytes (`ignore_merges` is reproduced);
//! - a text holding any added token's content goes to `encode_fast` whole (HF splits such
//!   a text on the added tokens first, with their strip and word flags).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use ahash::AHashMap;
use aho_corasick::AhoCorasick;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::utils::SysRegex;
use tokenizers::{ModelWrapper, SplitDelimiterBehavior};

/// ByteLevel's pattern when `use_regex` is on (GPT-2's), as `tokenizers` 0.22 has it.
const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Pieces at least this long are not cached (as `tokenizers`' BPE cache does not).
const MAX_CACHED_PIECE: usize = 256;

/// A thread's cache is cleared when it holds more pieces than this.
const CACHE_CAPACITY: usize = 1 << 16;

/// The source of [`ByteBpe::owner`]: a thread's cache belongs to one tokenizer at a time.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The pieces this thread has encoded, for the tokenizer `owner`.
    static CACHE: RefCell<PieceCache> = RefCell::new(PieceCache::default());
}

/// (left id, right id) → (rank, merged id): a BPE model's merges.
type MergeMap = AHashMap<(u32, u32), (u32, u32)>;

/// A thread's pieces → ids, of one tokenizer.
#[derive(Default)]
struct PieceCache {
    owner: u64,
    ids: AHashMap<Box<[u8]>, Box<[u32]>>,
}

/// A byte-level BPE tokenizer's pre-tokenizer regex, byte ids and merges.
pub(super) struct ByteBpe {
    /// The pattern splitting a text into pieces (matches and the gaps between them).
    regex: SysRegex,
    /// The id of each byte's byte-level character.
    byte_ids: [u32; 256],
    /// The merges, by (left id, right id).
    merges: MergeMap,
    /// With `ignore_merges`: each token's bytes → its id (a piece that is a token is it).
    whole: Option<AHashMap<Box<[u8]>, u32>>,
    /// The added tokens' contents; a text holding one takes the slow path.
    added: Option<AhoCorasick>,
    /// Whose entries a thread's cache holds.
    owner: u64,
}

impl ByteBpe {
    /// The fast path of `tokenizer`, or why it has none (the option it does not reproduce).
    pub(super) fn new(tokenizer: &tokenizers::Tokenizer) -> Result<Self, String> {
        if tokenizer.get_normalizer().is_some() {
            return Err("a normalizer".into());
        }
        if tokenizer.get_truncation().is_some() || tokenizer.get_padding().is_some() {
            return Err("truncation or padding".into());
        }
        let pattern = match tokenizer.get_pre_tokenizer() {
            Some(pre) => split_pattern(pre)?,
            None => return Err("no pre-tokenizer".into()),
        };
        let regex = SysRegex::new(&pattern).map_err(|e| format!("pattern {pattern:?}: {e}"))?;
        let ModelWrapper::BPE(bpe) = tokenizer.get_model() else {
            return Err("a model other than BPE".into());
        };
        check_model(bpe)?;
        let vocab = bpe.get_vocab();
        let byte_ids = byte_ids(&vocab)?;
        let merges = merges(bpe, &vocab)?;
        let whole = bpe.ignore_merges.then(|| whole_tokens(&vocab));
        let contents: Vec<String> = tokenizer
            .get_added_tokens_decoder()
            .into_values()
            .map(|token| token.content)
            .collect();
        let added = match contents.is_empty() {
            true => None,
            false => Some(AhoCorasick::new(&contents).map_err(|e| format!("added tokens: {e}"))?),
        };
        let owner = NEXT_OWNER.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        Ok(ByteBpe {
            regex,
            byte_ids,
            merges,
            whole,
            added,
            owner,
        })
    }

    /// Whether `text` holds an added token's content (and so takes the slow path).
    pub(super) fn has_added_token(&self, text: &str) -> bool {
        self.added.as_ref().is_some_and(|ac| ac.is_match(text))
    }

    /// The ids of `text`, which holds no added token.
    pub(super) fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 3);
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.owner != self.owner {
                cache.ids.clear();
                cache.owner = self.owner;
            }
            let mut prev = 0;
            for (start, end) in self.regex.find_iter(text) {
                if prev != start {
                    self.encode_piece(&text.as_bytes()[prev..start], &mut cache, &mut ids);
                }
                self.encode_piece(&text.as_bytes()[start..end], &mut cache, &mut ids);
                prev = end;
            }
            if prev != text.len() {
                self.encode_piece(&text.as_bytes()[prev..], &mut cache, &mut ids);
            }
        });
        ids
    }

    /// Appends the ids of `piece` (a pre-token's bytes) to `ids`.
    fn encode_piece(&self, piece: &[u8], cache: &mut PieceCache, ids: &mut Vec<u32>) {
        if piece.is_empty() {
            return;
        }
        if let Some(&id) = self.whole.as_ref().and_then(|whole| whole.get(piece)) {
            ids.push(id);
            return;
        }
        if let Some(hit) = cache.ids.get(piece) {
            ids.extend_from_slice(hit);
            return;
        }
        let start = ids.len();
        self.merge_piece(piece, ids);
        if piece.len() < MAX_CACHED_PIECE {
            if cache.ids.len() >= CACHE_CAPACITY {
                cache.ids.clear();
            }
            cache.ids.insert(piece.into(), ids[start..].into());
        }
    }

    /// Appends the BPE ids of `piece` to `ids`: `tokenizers`' `Word::merge_all` without
    /// dropout, over one symbol per byte, merging the pair of lowest rank first (then the
    /// leftmost).
    fn merge_piece(&self, piece: &[u8], ids: &mut Vec<u32>) {
        let mut symbols: Vec<Symbol> = (0..piece.len())
            .map(|i| Symbol {
                id: self.byte_ids[usize::from(piece[i])],
                prev: i.checked_sub(1),
                next: (i + 1 < piece.len()).then_some(i + 1),
                removed: false,
            })
            .collect();
        let mut queue: BinaryHeap<Merge> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, pair)| self.merge_at(pos, pair[0].id, pair[1].id))
            .collect();
        while let Some(top) = queue.pop() {
            let left = symbols[top.pos];
            let Some(next) = left.next.filter(|_| !left.removed) else {
                continue;
            };
            let right = symbols[next];
            // An entry queued before one of its symbols merged elsewhere is stale.
            if self.merges.get(&(left.id, right.id)).map(|m| m.1) != Some(top.new_id) {
                continue;
            }
            symbols[top.pos].id = top.new_id;
            symbols[top.pos].next = right.next;
            symbols[next].removed = true;
            if let Some(after) = right.next {
                symbols[after].prev = Some(top.pos);
            }
            let current = symbols[top.pos];
            if let Some(prev) = current.prev {
                queue.extend(self.merge_at(prev, symbols[prev].id, current.id));
            }
            if let Some(after) = current.next {
                queue.extend(self.merge_at(top.pos, current.id, symbols[after].id));
            }
        }
        ids.extend(symbols.iter().filter(|s| !s.removed).map(|s| s.id));
    }

    /// The merge of the pair (`left`, `right`) at `pos`, if the model has it.
    fn merge_at(&self, pos: usize, left: u32, right: u32) -> Option<Merge> {
        self.merges
            .get(&(left, right))
            .map(|&(rank, new_id)| Merge { pos, rank, new_id })
    }
}

/// A symbol of a piece being merged: a token id and its live neighbours.
#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: Option<usize>,
    next: Option<usize>,
    removed: bool,
}

/// A merge waiting in the queue: the pair starting at symbol `pos`.
#[derive(PartialEq, Eq)]
struct Merge {
    pos: usize,
    rank: u32,
    new_id: u32,
}

impl Ord for Merge {
    /// Reversed, so that the max-heap pops the lowest rank, then the lowest position.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.rank, other.pos).cmp(&(self.rank, self.pos))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The pattern of the pre-tokenizer `pre`, if the fast path reproduces it.
fn split_pattern(pre: &PreTokenizerWrapper) -> Result<String, String> {
    match pre {
        PreTokenizerWrapper::ByteLevel(level) => {
            check_byte_level(level, true)?;
            Ok(GPT2_PATTERN.into())
        }
        PreTokenizerWrapper::Sequence(sequence) => match sequence.as_ref() {
            [
                PreTokenizerWrapper::Split(split),
                PreTokenizerWrapper::ByteLevel(level),
            ] => {
                check_byte_level(level, false)?;
                split_regex(split)
            }
            _ => Err("a pre-tokenizer sequence other than [Split, ByteLevel]".into()),
        },
        _ => Err("a pre-tokenizer other than ByteLevel or [Split, ByteLevel]".into()),
    }
}

/// Whether `level` is ByteLevel without a prefix space and with `use_regex` as given.
fn check_byte_level(level: &ByteLevel, use_regex: bool) -> Result<(), String> {
    if level.add_prefix_space {
        return Err("ByteLevel with add_prefix_space".into());
    }
    if level.use_regex != use_regex {
        return Err(format!("ByteLevel with use_regex {}", level.use_regex));
    }
    Ok(())
}

/// The regex of a `Split` that isolates its matches.
fn split_regex(split: &Split) -> Result<String, String> {
    match (&split.pattern, split.behavior, split.invert) {
        (SplitPattern::Regex(pattern), SplitDelimiterBehavior::Isolated, false) => {
            Ok(pattern.clone())
        }
        _ => Err("a Split other than an isolating, non-inverted regex".into()),
    }
}

/// Whether the BPE options are the ones the fast path reproduces.
fn check_model(bpe: &BPE) -> Result<(), String> {
    // An empty prefix or suffix (GPT-2's and RoBERTa's files have them) changes nothing.
    let prefix = bpe
        .continuing_subword_prefix
        .as_ref()
        .is_some_and(|p| !p.is_empty());
    let suffix = bpe
        .end_of_word_suffix
        .as_ref()
        .is_some_and(|s| !s.is_empty());
    let options = [
        ("dropout", bpe.dropout.is_some_and(|p| p != 0.0)),
        ("unk_token", bpe.unk_token.is_some()),
        ("byte_fallback", bpe.byte_fallback),
        ("continuing_subword_prefix", prefix),
        ("end_of_word_suffix", suffix),
    ];
    match options.iter().find(|(_, on)| *on) {
        Some((name, _)) => Err(format!("BPE with {name}")),
        None => Ok(()),
    }
}

/// GPT-2's byte → character table (`bytes_to_unicode`): printable bytes stand for
/// themselves, the others for the characters from U+0100 on, in byte order.
pub(super) fn byte_chars() -> [char; 256] {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut chars = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        chars[usize::from(b)] = match printable(b) {
            true => char::from(b),
            false => {
                next += 1;
                char::from_u32(next - 1).expect("U+0100..U+0143 are characters")
            }
        };
    }
    chars
}

/// The id of each byte's character, when the vocabulary has all 256.
fn byte_ids(vocab: &std::collections::HashMap<String, u32>) -> Result<[u32; 256], String> {
    let mut ids = [0; 256];
    for (b, c) in byte_chars().into_iter().enumerate() {
        ids[b] = *vocab
            .get(c.encode_utf8(&mut [0; 4]) as &str)
            .ok_or_else(|| format!("no token for the byte {b:#04x}"))?;
    }
    Ok(ids)
}

/// The model's merges, by rank, as (left id, right id) → (rank, merged id).
///
/// `tokenizers` does not expose its merge map: the model's serialization lists the merges
/// in rank order, and the vocabulary gives their ids as `tokenizers` builds them.
fn merges(bpe: &BPE, vocab: &std::collections::HashMap<String, u32>) -> Result<MergeMap, String> {
    let json = serde_json::to_value(bpe).map_err(|e| format!("BPE model: {e}"))?;
    let merges: Vec<(String, String)> = json
        .get("merges")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("merges: {e}"))?
        .unwrap_or_default();
    let id = |token: &str| {
        vocab
            .get(token)
            .copied()
            .ok_or_else(|| format!("merge token {token:?} not in the vocabulary"))
    };
    let mut map = AHashMap::with_capacity(merges.len());
    for (rank, (left, right)) in merges.iter().enumerate() {
        let rank = u32::try_from(rank).map_err(|_| "more than 2^32 merges".to_string())?;
        let merged = id(&format!("{left}{right}"))?;
        map.insert((id(left)?, id(right)?), (rank, merged));
    }
    Ok(map)
}

/// Each token of `vocab` made of byte-level characters, as its bytes → its id.
fn whole_tokens(vocab: &std::collections::HashMap<String, u32>) -> AHashMap<Box<[u8]>, u32> {
    let mut char_bytes = AHashMap::with_capacity(256);
    for (b, c) in byte_chars().into_iter().enumerate() {
        char_bytes.insert(c, b as u8);
    }
    vocab
        .iter()
        .filter_map(|(token, &id)| {
            let bytes: Option<Box<[u8]>> =
                token.chars().map(|c| char_bytes.get(&c).copied()).collect();
            bytes.map(|bytes| (bytes, id))
        })
        .collect()
}

#[cfg(test)]
#[path = "byte_bpe_tests.rs"]
mod tests;
