//! The fast path against `tokenizers`' own `encode_batch_fast`, id for id.

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use tokenizers::AddedToken;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::BpeTrainerBuilder;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;

use super::super::Tokenizer;

/// The tests' and the examples' tokenizer (tests/data/tokenize/tokenizer.json: 512 ids).
fn fixture_json() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenize/tokenizer.json");
    std::fs::read_to_string(path).unwrap()
}

/// Llama 3's pre-tokenizer pattern.
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The repository's own text files (Markdown, Rust, Python), in name order, up to about
/// 300 KB: the documents of the tests (text as the bench's corpus is: source code and prose).
fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in [
            "docs",
            "src/tokenize",
            "src/shards",
            "python/lodtensor",
            "src",
        ] {
            let mut names: Vec<_> = std::fs::read_dir(root.join(dir))
                .expect("the repository's directories")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            names.sort();
            files.extend(names);
        }
        let mut texts = Vec::new();
        let mut total = 0;
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            total += text.len();
            texts.push(text);
            if total > 300_000 {
                break;
            }
        }
        texts
    })
}

/// A byte-level BPE of 2,000 ids trained on [`corpus`] with `tokenizers`' trainer, as JSON.
fn trained_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let json = fixture_json();
        let mut tokenizer: tokenizers::Tokenizer = json.parse().unwrap();
        let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
            .vocab_size(2000)
            .show_progress(false)
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .special_tokens(vec![AddedToken::from("<|endoftext|>", true)])
            .build()
            .into();
        tokenizer.train(&mut trainer, corpus().iter()).unwrap();
        tokenizer.to_string(false).unwrap()
    })
}

/// `json` with its pre-tokenizer Llama 3's (a `Split` then a `ByteLevel` without regex) and
/// `ignore_merges` on.
fn llama3_json(json: &str) -> String {
    let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
    value["pre_tokenizer"] = serde_json::json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
    ]});
    value["model"]["ignore_merges"] = true.into();
    value.to_string()
}

/// `json` with `path` (`["model", "byte_fallback"]`) set to `to`.
fn with(json: &str, path: &[&str], to: serde_json::Value) -> String {
    let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut at = &mut value;
    for key in path {
        at = &mut at[*key];
    }
    *at = to;
    value.to_string()
}

/// The fixture's tokenizer, its GPT-2 form, the trained one and its Llama 3 form.
fn tokenizers_json() -> Vec<String> {
    let fixture = fixture_json();
    // GPT-2's own file has an empty subword prefix and word suffix.
    let gpt2 = with(
        &with(&fixture, &["model", "continuing_subword_prefix"], "".into()),
        &["model", "end_of_word_suffix"],
        "".into(),
    );
    vec![
        fixture,
        gpt2,
        trained_json().to_owned(),
        llama3_json(trained_json()),
    ]
}

/// Asserts the ids of `texts` are `tokenizers`' `encode_batch_fast(texts, false)`'s, text by
/// text, and that `json` takes the fast path when `fast`.
fn assert_same_ids(json: &str, texts: &[&str], fast: bool) {
    let tokenizer = Tokenizer::from_json(json).unwrap();
    let hf: tokenizers::Tokenizer = json.parse().unwrap();
    assert_same_ids_of(&tokenizer, &hf, texts, fast);
}

/// [`assert_same_ids`] of tokenizers already loaded.
fn assert_same_ids_of(
    tokenizer: &Tokenizer,
    hf: &tokenizers::Tokenizer,
    texts: &[&str],
    fast: bool,
) {
    assert_eq!(
        tokenizer.slow_path_reason().is_none(),
        fast,
        "{:?}",
        tokenizer.slow_path_reason()
    );
    let expected: Vec<Vec<u32>> = hf
        .encode_batch_fast(texts.to_vec(), false)
        .unwrap()
        .iter()
        .map(|e| e.get_ids().to_vec())
        .collect();
    let ids = tokenizer.encode_batch(texts).unwrap();
    for (i, (ids, expected)) in ids.iter().zip(&expected).enumerate() {
        assert_eq!(ids, expected, "text {i}: {:?}", texts[i]);
    }
    assert_eq!(ids.len(), expected.len());
}

/// Strings at the pre-tokenizers' and the merges' edges.
fn adversarial() -> Vec<String> {
    let mut texts: Vec<String> = [
        "",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\r\n\r\n",
        " \t \n  x",
        "x   ",
        "   x",
        "a  \n\n  b",
        "it's they're we'll I'M YOU'RE SHE'LL he'D 'S 'll '",
        "l'été",
        "1234567 3.14 -5 1e10",
        "٣٤٥ ⅷ ½ ²",
        "é e\u{301} \u{301}\u{301} a\u{308}",
        "\u{301}",
        "naïve Ærøskøbing",
        "日本語のテキスト 中文",
        "😀 👩‍👩‍👧‍👦 🏳️‍🌈 \u{200d}",
        "x\u{200d}y",
        "\u{feff}bom",
        "<|endoftext|>",
        "a<|endoftext|>b",
        "word<|endoftext|>",
        "<|endoftext|> lead",
        " <|endoftext|> ",
        "<|endoftext|><|endoftext|>",
        "<|endoftext",
        "|endoftext|>",
        "def f(x):\n    return x  # é\n",
        "\u{0}\u{1}\u{7f}\u{80}\u{ff}",
    ]
    .map(String::from)
    .to_vec();
    texts.push("a".repeat(10_000));
    texts.push("é".repeat(10_000));
    texts.push(" ".repeat(10_000) + "x");
    texts.push("hello".repeat(2_000));
    texts
}

#[test]
fn same_ids_as_tokenizers_on_the_corpus() {
    let texts: Vec<&str> = corpus().iter().map(String::as_str).collect();
    for json in tokenizers_json() {
        assert_same_ids(&json, &texts, true);
    }
}

#[test]
fn same_ids_as_tokenizers_on_adversarial_strings() {
    let texts = adversarial();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for json in tokenizers_json() {
        assert_same_ids(&json, &texts, true);
    }
}

#[test]
fn each_tokenizer_has_its_own_cache() {
    let fixture = fixture_json();
    let jsons = [fixture.as_str(), trained_json()];
    let text = ["the tokenizer encodes the documents"];
    // One thread: the second tokenizer finds the first one's pieces in the thread's cache.
    std::thread::scope(|s| {
        s.spawn(|| {
            for json in jsons.iter().chain(&jsons) {
                let tokenizer = Tokenizer::from_json(json).unwrap();
                let hf: tokenizers::Tokenizer = json.parse().unwrap();
                let expected = hf.encode_fast(text[0], false).unwrap().get_ids().to_vec();
                let ids = tokenizer.encode_batch(&text).unwrap();
                assert_eq!(ids, [expected]);
            }
        });
    });
}

#[test]
fn options_not_reproduced_take_the_slow_path_with_the_same_ids() {
    let texts = adversarial();
    let mut texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    texts.extend(corpus().iter().take(5).map(String::as_str));
    let json = trained_json();
    let slow = [
        with(json, &["normalizer"], serde_json::json!({"type": "NFC"})),
        with(
            json,
            &["normalizer"],
            serde_json::json!({"type": "Lowercase"}),
        ),
        with(json, &["model", "byte_fallback"], true.into()),
        with(json, &["pre_tokenizer", "add_prefix_space"], true.into()),
        with(json, &["model", "end_of_word_suffix"], "</w>".into()),
    ];
    for json in &slow {
        assert_same_ids(json, &texts, false);
    }
    let reasons: Vec<String> = slow
        .iter()
        .map(|json| {
            Tokenizer::from_json(json)
                .unwrap()
                .slow_path_reason()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        reasons,
        [
            "a normalizer",
            "a normalizer",
            "BPE with byte_fallback",
            "ByteLevel with add_prefix_space",
            "BPE with end_of_word_suffix"
        ]
    );
}

/// Pieces of text the proptest strings are made of.
const PIECES: [&str; 24] = [
    "a",
    "Z",
    "s",
    "ll",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "'",
    "'S",
    "'ll",
    "é",
    "\u{301}",
    "1",
    "٣",
    "😀",
    "\u{200d}",
    "日本",
    ".",
    "<|endoftext|>",
    "<|end",
    "the",
    "ing",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn same_ids_as_tokenizers_on_random_strings(
        texts in prop::collection::vec(
            prop::collection::vec(prop::sample::select(&PIECES[..]), 0..40).prop_map(|p| p.concat()),
            1..8,
        )
    ) {
        static LOADED: OnceLock<Vec<(Tokenizer, tokenizers::Tokenizer)>> = OnceLock::new();
        let loaded = LOADED.get_or_init(|| {
            tokenizers_json()
                .iter()
                .map(|json| (Tokenizer::from_json(json).unwrap(), json.parse().unwrap()))
                .collect()
        });
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        for (tokenizer, hf) in loaded {
            assert_same_ids_of(tokenizer, hf, &texts, true);
        }
    }
}
