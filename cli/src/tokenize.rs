//! `lodtensor tokenize INPUT... OUTPUT --tokenizer tokenizer.json [--field F] [--split SEP]`:
//! text files, JSON lines and Parquet files, local or in a bucket → a sharded dataset of token ids (a directory or
//! a URL), with a progress bar; a run killed and started again writes every document once
//! (`lodtensor::tokenize`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use lodtensor::IpcCompression;
use lodtensor::WriteOptions;
use lodtensor::shards::ShardOptions;
use lodtensor::tokenize::{Input, Special, TokenizeOptions, Tokenizer};

use crate::source::plural;
use crate::{Result, usage};

/// Arguments of `lodtensor tokenize`.
#[derive(clap::Args)]
pub struct Args {
    /// The inputs (text files, one document each; .jsonl/.ndjson/.json lines; .parquet;
    /// directories of them; URLs: an object, a prefix's objects or a glob's), then the
    /// output: a directory, or a URL (s3://bucket/prefix/, credentials from the
    /// environment's AWS_* variables).
    #[arg(required = true, num_args = 2.., value_name = "INPUT... OUTPUT")]
    paths: Vec<PathBuf>,
    /// The HuggingFace tokenizer file (tokenizer.json).
    #[arg(long, value_name = "tokenizer.json")]
    tokenizer: PathBuf,
    /// The JSON field or Parquet column of the text (default "text").
    #[arg(long, value_name = "F")]
    field: Option<String>,
    /// Split each document into pieces at SEP ("\n" for lines, "\n\n" for paragraphs;
    /// escapes \n \t \\ understood): documents → pieces → tokens.
    #[arg(long, value_name = "SEP")]
    split: Option<String>,
    /// The end-of-text token after each document: auto (the tokenizer's own), none, or a
    /// token.
    #[arg(long, value_name = "auto|none|TOKEN", default_value = "auto")]
    eos: String,
    /// The beginning-of-text token before each document: auto, none, or a token.
    #[arg(long, value_name = "auto|none|TOKEN", default_value = "none")]
    bos: String,
    /// Close a shard at N documents (default: at 256 MiB).
    #[arg(long, value_name = "N")]
    shard_rows: Option<usize>,
    /// Compress the shards (zstd or lz4; default none: mapped without a copy).
    #[arg(long, value_name = "none|zstd|lz4")]
    compression: Option<String>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: Args) -> Result<()> {
    let (output, inputs) = args.paths.split_last().expect("clap: at least 2 paths");
    let tokenizer = Tokenizer::from_file(&args.tokenizer)?;
    let mut options = TokenizeOptions::default()
        .with_eos(special(&args.eos))
        .with_bos(special(&args.bos));
    if let Some(field) = args.field {
        options = options.with_field(field);
    }
    if let Some(split) = &args.split {
        options = options.with_split(unescape(split));
    }
    let mut write = WriteOptions::default();
    if let Some(codec) = &args.compression {
        match codec.parse::<IpcCompression>() {
            Ok(c) => write = write.with_compression(c),
            Err(_) => return usage(format!("--compression {codec}: none, zstd or lz4")),
        }
    }
    let mut shards = ShardOptions::default().with_write_options(write);
    if let Some(rows) = args.shard_rows {
        shards = shards.with_shard_rows(rows);
    }
    let bar = crate::source::progress(0, "tokenize", "MB");
    if args.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let shown = bar.clone();
    options = options.with_shard_options(shards).with_progress(move |p| {
        shown.set_length(p.total_bytes >> 20);
        shown.set_position(p.bytes >> 20);
    });
    let start = Instant::now();
    let inputs: Vec<Input> = inputs.iter().map(Input::from).collect();
    let output_text = output.to_string_lossy();
    let manifest = lodtensor::tokenize::tokenize(inputs, &output_text, &tokenizer, &options)?;
    bar.finish_and_clear();
    let tokens: u64 = manifest.shards.iter().map(shard_tokens).sum();
    writeln!(
        std::io::stdout().lock(),
        "tokenize {}: {} of {} token ids ({}) in {}, {:.1} s",
        output.display(),
        plural(manifest.num_rows(), "document"),
        tokens,
        tokenizer.dtype().name(),
        plural(manifest.shards.len(), "shard"),
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// The token ids of a shard: the elements of its `tokens` column.
fn shard_tokens(shard: &lodtensor::shards::ShardEntry) -> u64 {
    shard.columns.first().map_or(0, |c| c.elements as u64)
}

/// `auto`, `none` or a token.
fn special(value: &str) -> Special {
    match value {
        "auto" => Special::Auto,
        "none" => Special::None,
        token => Special::Token(token.to_owned()),
    }
}

/// `\n`, `\t`, `\r` and `\\` as the characters they name.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn separators_are_unescaped() {
        assert_eq!(super::unescape(r"\n\n"), "\n\n");
        assert_eq!(super::unescape(r"a\tb\\"), "a\tb\\");
    }
}
