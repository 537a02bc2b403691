//! The tokenizer: a HuggingFace `tokenizer.json` loaded with the `tokenizers` crate, the
//! dtype its ids fit, and its end- and beginning-of-text tokens.

use std::path::Path;

use tokenizers::parallelism::MaybeParallelRefIterator;

use crate::error::{Error, FileFormat, Result};
use crate::values::DType;

use super::byte_bpe::ByteBpe;

/// The end-of-text tokens looked for by [`Special::Auto`], in this order.
const EOS_NAMES: [&str; 6] = [
    "<|endoftext|>",
    "</s>",
    "<|end_of_text|>",
    "<eos>",
    "<|eot_id|>",
    "[SEP]",
];
/// The beginning-of-text tokens looked for by [`Special::Auto`], in this order.
const BOS_NAMES: [&str; 5] = [
    "<s>",
    "<|begin_of_text|>",
    "<bos>",
    "<|startoftext|>",
    "[CLS]",
];

/// A special token put at a document's end (EOS) or start (BOS).
///
/// # Example
/// ```
/// use lodtensor::tokenize::{Special, Tokenizer};
/// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
/// assert_eq!(tokenizer.special_id("eos", &Special::Auto)?, tokenizer.eos_id());
/// assert_eq!(tokenizer.special_id("eos", &Special::None)?, None);
/// assert!(tokenizer.special_id("bos", &Special::Auto).is_err());    // it has none
/// # Ok::<(), lodtensor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Special {
    /// None.
    None,
    /// The tokenizer's own: the first of its special (added) tokens among the usual names
    /// (EOS: `<|endoftext|>`, `</s>`, `<|end_of_text|>`, `<eos>`, `<|eot_id|>`, `[SEP]`;
    /// BOS: `<s>`, `<|begin_of_text|>`, `<bos>`, `<|startoftext|>`, `[CLS]`).
    Auto,
    /// This token (any token of the vocabulary).
    Token(String),
}

/// A HuggingFace tokenizer (`tokenizer.json`), as [`tokenize`](super::tokenize) uses it.
///
/// # Example
/// ```
/// use lodtensor::DType;
/// use lodtensor::tokenize::Tokenizer;
/// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
/// assert!(tokenizer.vocab_size() <= 65_536);
/// assert_eq!(tokenizer.dtype(), DType::UInt16);
/// # Ok::<(), lodtensor::Error>(())
/// ```
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// One past the largest id.
    vocab_size: usize,
    /// The byte-level BPE fast path of [`Tokenizer::encode_batch`], decided once here: a
    /// tokenizer with an option it does not reproduce exactly (a normalizer, byte fallback,
    /// dropout, `add_prefix_space`, another pre-tokenizer or model...) keeps `tokenizers`'
    /// own `encode_batch_fast`, and the error says which option.
    fast: std::result::Result<ByteBpe, String>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size)
            .field("slow_path_reason", &self.slow_path_reason())
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Loads the tokenizer file `path` (`tokenizer.json`).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the path when it cannot be read;
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) ([`FileFormat::Tokenizer`])
    /// when it is not a tokenizer.
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::Tokenizer;
    /// let err = Tokenizer::from_file("no/such/tokenizer.json").unwrap_err();
    /// assert!(matches!(err.kind(), lodtensor::ErrorKind::Io(_)));
    /// assert!(err.to_string().contains("no/such/tokenizer.json"));
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|e| Error::from(e).in_file(path))?;
        Self::from_json(&json).map_err(|e| e.in_file(path))
    }

    /// The tokenizer of the JSON text `json` (a `tokenizer.json`'s content, or Python's
    /// `tokenizers.Tokenizer.to_str()`).
    ///
    /// # Errors
    /// [`FormatError::InvalidFile`](crate::FormatError::InvalidFile) ([`FileFormat::Tokenizer`]).
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::Tokenizer;
    /// let err = Tokenizer::from_json("{\"not\": \"a tokenizer\"}").unwrap_err();
    /// assert!(err.to_string().starts_with("invalid tokenizer.json file"));
    /// ```
    pub fn from_json(json: &str) -> Result<Self> {
        let inner: tokenizers::Tokenizer = json
            .parse()
            .map_err(|e| Error::invalid(FileFormat::Tokenizer, format!("{e}")))?;
        let vocab_size = inner
            .get_vocab(true)
            .values()
            .max()
            .map_or(0, |&id| id as usize + 1);
        let fast = ByteBpe::new(&inner);
        Ok(Tokenizer {
            inner,
            vocab_size,
            fast,
        })
    }

    /// One past the largest token id.
    ///
    /// # Example
    /// ```
    /// let tokenizer = lodtensor::tokenize::Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// assert!(tokenizer.vocab_size() > 256);                 // the bytes and some merges
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The narrowest dtype of the ids: `uint16` when every id is below 65,536, else `int32`
    /// (which PyTorch's embeddings take as they are).
    ///
    /// # Example
    /// ```
    /// let tokenizer = lodtensor::tokenize::Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// assert_eq!(tokenizer.dtype(), lodtensor::DType::UInt16);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn dtype(&self) -> DType {
        match self.vocab_size <= 1 << 16 {
            true => DType::UInt16,
            false => DType::Int32,
        }
    }

    /// The id of the end-of-text token [`Special::Auto`] finds, if any.
    ///
    /// # Example
    /// ```
    /// let tokenizer = lodtensor::tokenize::Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// assert!(tokenizer.eos_id().is_some());
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn eos_id(&self) -> Option<u32> {
        self.find_special(&EOS_NAMES)
    }

    /// The id of the beginning-of-text token [`Special::Auto`] finds, if any.
    ///
    /// # Example
    /// ```
    /// let tokenizer = lodtensor::tokenize::Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// assert_eq!(tokenizer.bos_id(), None);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn bos_id(&self) -> Option<u32> {
        self.find_special(&BOS_NAMES)
    }

    /// The id `special` names, for the option `option` (`"eos"` or `"bos"`).
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) naming the
    /// option when the tokenizer has no such token.
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::{Special, Tokenizer};
    /// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// let err = tokenizer.special_id("bos", &Special::Token("<nope>".into())).unwrap_err();
    /// assert!(err.to_string().contains("bos"));
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn special_id(&self, option: &'static str, special: &Special) -> Result<Option<u32>> {
        let names: &[&str] = match option {
            "bos" => &BOS_NAMES,
            _ => &EOS_NAMES,
        };
        match special {
            Special::None => Ok(None),
            Special::Auto => match self.find_special(names) {
                Some(id) => Ok(Some(id)),
                None => Err(Error::invalid_argument(
                    "tokenize",
                    option,
                    format!("on, but the tokenizer has none of the special tokens {names:?}"),
                    format!("{option} off, or the token to use named"),
                )),
            },
            Special::Token(token) => match self.inner.token_to_id(token) {
                Some(id) => Ok(Some(id)),
                None => Err(Error::invalid_argument(
                    "tokenize",
                    option,
                    format!("{token:?}, which the tokenizer does not have"),
                    "a token of the tokenizer's vocabulary",
                )),
            },
        }
    }

    /// The first of `names` that is a special token of the tokenizer.
    fn find_special(&self, names: &[&str]) -> Option<u32> {
        let added = self.inner.get_added_tokens_decoder();
        names.iter().find_map(|name| {
            added
                .iter()
                .find(|(_, token)| token.special && token.content == *name)
                .map(|(&id, _)| id)
        })
    }

    /// Why [`encode_batch`](Self::encode_batch) takes `tokenizers`' own `encode_batch_fast`
    /// rather than the byte-level BPE fast path, or `None` when it takes the fast path.
    ///
    /// The fast path covers byte-level BPE tokenizers (GPT-2, RoBERTa, Llama 3): no
    /// normalizer, a `ByteLevel` pre-tokenizer (GPT-2's regex, no prefix space) or a regex
    /// `Split` then a `ByteLevel` without regex, a BPE model without dropout, unknown token,
    /// byte fallback, non-empty subword prefix or word suffix. Any other tokenizer gives the
    /// same ids the slower way.
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::Tokenizer;
    /// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// assert_eq!(tokenizer.slow_path_reason(), None);      // GPT-2's kind: the fast path
    /// let json = std::fs::read_to_string(lodtensor::doc_fixtures::tokenizer_json())?
    ///     .replace("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}");
    /// let nfc = Tokenizer::from_json(&json)?;
    /// assert_eq!(nfc.slow_path_reason(), Some("a normalizer"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slow_path_reason(&self) -> Option<&str> {
        self.fast.as_ref().err().map(String::as_str)
    }

    /// The ids of each of `texts`, encoded in parallel (as `tokenizers`' `encode_batch_fast`
    /// is, on its rayon pool), without the tokenizer's own special tokens (its
    /// post-processor): the ids `tokenizers`' `encode_batch_fast(texts, false)` gives,
    /// through the byte-level BPE fast path when the tokenizer has one
    /// ([`slow_path_reason`](Self::slow_path_reason)).
    ///
    /// # Errors
    /// [`ArgumentError::InvalidArgument`](crate::ArgumentError::InvalidArgument) when the
    /// tokenizer fails to encode a text.
    ///
    /// # Example
    /// ```
    /// use lodtensor::tokenize::Tokenizer;
    /// let tokenizer = Tokenizer::from_file(lodtensor::doc_fixtures::tokenizer_json())?;
    /// let ids = tokenizer.encode_batch(&["hello world", "", "<|endoftext|>"])?;
    /// assert_eq!(ids.len(), 3);
    /// assert!(ids[1].is_empty());
    /// assert_eq!(ids[2], [tokenizer.eos_id().unwrap()]);
    /// # Ok::<(), lodtensor::Error>(())
    /// ```
    pub fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let Ok(fast) = &self.fast else {
            return self.encode_batch_slow(texts);
        };
        texts
            .maybe_par_iter()
            .map(|&text| match fast.has_added_token(text) {
                true => self.encode_batch_slow(&[text]).map(|mut ids| ids.remove(0)),
                false => Ok(fast.encode(text)),
            })
            .collect()
    }

    /// The ids of each of `texts` by `tokenizers`' own `encode_batch_fast`.
    fn encode_batch_slow(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        let encodings = self
            .inner
            .encode_batch_fast(texts.to_vec(), false)
            .map_err(|e| {
                Error::invalid_argument("tokenize", "tokenizer", e, "a tokenizer that encodes text")
            })?;
        Ok(encodings
            .into_iter()
            .map(|e| e.get_ids().to_vec())
            .collect())
    }
}
