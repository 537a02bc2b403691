//! A chunk of documents encoded into a dataset: the `tokens` column (documents → tokens, or
//! documents → pieces → tokens) in the tokenizer's dtype, and the `source` side column.

use std::sync::Arc;

use arrow_array::StringArray;
use arrow_array::types::{Int32Type, UInt16Type};

use crate::dataset::{Column, Dataset};
use crate::error::Result;
use crate::tensor::LodTensor;
use crate::tokenize::read::Chunk;
use crate::tokenize::vocab::Tokenizer;
use crate::values::DType;

/// How documents become rows of token ids.
pub(super) struct Encoder<'a> {
    pub tokenizer: &'a Tokenizer,
    pub eos: Option<u32>,
    pub bos: Option<u32>,
    /// The separator pieces end at, for two levels.
    pub split: Option<&'a str>,
}

impl Encoder<'_> {
    /// The rows of `chunk`'s documents (an empty chunk gives the columns with no rows).
    pub fn encode(&self, chunk: &Chunk) -> Result<Dataset> {
        // Pieces per document (one level: each document is its one piece).
        let mut pieces: Vec<usize> = Vec::with_capacity(chunk.texts.len());
        let mut texts: Vec<&str> = Vec::with_capacity(chunk.texts.len());
        for text in &chunk.texts {
            let before = texts.len();
            match self.split {
                Some(separator) => texts.extend(text.split_inclusive(separator)),
                None => texts.push(text),
            }
            // A document with no piece holds its special tokens in one.
            if texts.len() == before && (self.split.is_none() || self.has_specials()) {
                texts.push("");
            }
            pieces.push(texts.len() - before);
        }
        let encoded = self.tokenizer.encode_batch(&texts)?;
        let mut lengths: Vec<usize> = Vec::with_capacity(encoded.len());
        let mut ids: Vec<u32> = Vec::with_capacity(encoded.iter().map(Vec::len).sum::<usize>());
        let mut next = encoded.into_iter();
        for &count in &pieces {
            for piece in 0..count {
                let start = ids.len();
                if let (0, Some(bos)) = (piece, self.bos) {
                    ids.push(bos);
                }
                ids.extend(next.next().expect("one encoding per piece"));
                if let (true, Some(eos)) = (piece + 1 == count, self.eos) {
                    ids.push(eos);
                }
                lengths.push(ids.len() - start);
            }
        }
        let levels = match self.split {
            Some(_) => vec![pieces, lengths],
            None => vec![lengths],
        };
        let tokens = self.tensor(&levels, ids)?;
        let names: &[&str] = match self.split {
            Some(_) => &["documents", "pieces"],
            None => &["documents"],
        };
        let sources: StringArray = chunk.sources.iter().map(|s| Some(&**s)).collect();
        Dataset::try_new(vec![
            Column::new("tokens", tokens).with_level_names(names.iter().copied())?,
            Column::side("source", Arc::new(sources))?,
        ])
    }

    fn has_specials(&self) -> bool {
        self.eos.is_some() || self.bos.is_some()
    }

    /// The ids in the tokenizer's dtype (each id is below its vocabulary size).
    fn tensor(&self, lengths: &[Vec<usize>], ids: Vec<u32>) -> Result<LodTensor> {
        match self.tokenizer.dtype() {
            DType::UInt16 => LodTensor::from_lengths::<UInt16Type>(
                lengths,
                ids.into_iter().map(|id| id as u16).collect(),
                vec![],
            ),
            _ => LodTensor::from_lengths::<Int32Type>(
                lengths,
                ids.into_iter().map(|id| id as i32).collect(),
                vec![],
            ),
        }
    }
}
