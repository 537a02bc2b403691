//! Where `lt.tokenize`'s encoding time goes: `tokenizers`' own `encode_batch_fast` against
//! `lodtensor`'s `Tokenizer::encode_batch` (the byte-level BPE fast path when the tokenizer
//! has one), in one process, on the same documents, alternated, the ids checked equal.
//!
//! ```text
//! cargo run --release --features tokenize --example tokenize_fast_path -- CORPUS TOKENIZER [ROUNDS]
//! ```
//!
//! CORPUS is a directory of text files (one document each, read whole), TOKENIZER a
//! `tokenizer.json`. Both paths run on every core, on chunks of 1,024 documents (as
//! `tokenize` gives them).

use std::path::{Path, PathBuf};
use std::time::Instant;

use lodtensor::tokenize::Tokenizer;

/// The text files under `dir`, in name order.
fn files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        match path.is_dir() {
            true => files(&path, out)?,
            false => out.push(path),
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(corpus), Some(tokenizer)) = (args.get(1), args.get(2)) else {
        return Err("usage: tokenize_fast_path CORPUS TOKENIZER [ROUNDS]".into());
    };
    let rounds: usize = args.get(3).map_or(Ok(3), |r| r.parse())?;
    let mut paths = Vec::new();
    files(Path::new(corpus), &mut paths)?;
    let texts: Vec<String> = paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let chunks: Vec<Vec<&str>> = texts
        .chunks(1024)
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let hf = tokenizers::Tokenizer::from_file(tokenizer).map_err(|e| e.to_string())?;
    let fast = Tokenizer::from_file(tokenizer)?;
    println!(
        "{} documents, {:.1} MB; fast path: {}",
        texts.len(),
        bytes as f64 / 1e6,
        fast.slow_path_reason()
            .map_or("yes".into(), |r| format!("no ({r})"))
    );
    for round in 0..rounds {
        let start = Instant::now();
        let mut expected = Vec::new();
        for chunk in &chunks {
            let encodings = hf
                .encode_batch_fast(chunk.clone(), false)
                .map_err(|e| e.to_string())?;
            expected.extend(encodings.into_iter().map(|e| e.get_ids().to_vec()));
        }
        let slow = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut ids = Vec::new();
        for chunk in &chunks {
            ids.extend(fast.encode_batch(chunk)?);
        }
        let quick = start.elapsed().as_secs_f64();
        assert!(ids == expected, "the ids differ from encode_batch_fast's");
        println!(
            "round {round}: encode_batch_fast {slow:.2} s, Tokenizer::encode_batch {quick:.2} s, {:.2}x",
            slow / quick
        );
    }
    Ok(())
}
