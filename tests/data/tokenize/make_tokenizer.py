"""Makes tokenizer.json: a byte-level BPE of 512 ids (GPT-2's pre-tokenizer and decoder,
the special token <|endoftext|>) trained on the repository's README.md, for the tests and
the examples of `lodtensor::tokenize` (no download: the `tokenizers` package trains it).

    python tests/data/tokenize/make_tokenizer.py      # with `tokenizers` installed
"""

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = Path(__file__).resolve().parent


def train(texts, vocab_size=512, specials=("<|endoftext|>",)):
    """A byte-level BPE of ``vocab_size`` ids with the special tokens ``specials``, trained
    on ``texts`` (an iterable of str). The Python tests and the tokenize benchmark train
    theirs with it too."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


if __name__ == "__main__":
    readme = (HERE.parents[2] / "README.md").read_text().split("\n\n")
    train(readme).save(str(HERE / "tokenizer.json"))
