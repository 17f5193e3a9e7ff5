"""Writes tokenizer/testdata: two tokenizers trained with Hugging Face's `tokenizers`
package on this repository's docs, and the ids that package gives a set of texts, so that
the Go counter (tokenizer/) is tested against the Python package on the same files.

Run from the repository's root: python scripts/tokenizer_fixtures.py
"""

from __future__ import annotations

import json
import pathlib

from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tokenizer" / "testdata"


def corpus() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]


def byte_bpe(texts: list[str]) -> Tokenizer:
    """A byte-level BPE as GPT-2 and its successors use."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tr = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet)
    t.train_from_iterator(texts, tr)
    return t


# The Split patterns of Llama 3 (numbers in threes) and Qwen 2 (digits one by one).
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")


def split_bpe(texts: list[str], pattern: str, normalizer: normalizers.Normalizer | None) -> Tokenizer:
    """A byte-level BPE split as Llama 3 and Qwen 2 split (a Split regex, then bytes)."""
    t = Tokenizer(models.BPE(ignore_merges=True))
    if normalizer is not None:
        t.normalizer = normalizer
    t.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tr = trainers.BpeTrainer(vocab_size=1500, special_tokens=["<|begin_of_text|>"], initial_alphabet=alphabet)
    t.train_from_iterator(texts, tr)
    return t


def word_bpe(texts: list[str]) -> Tokenizer:
    """A BPE over words (NFKC, lowercase, Whitespace), with an unknown token and added tokens
    that strip the spaces beside them."""
    t = Tokenizer(models.BPE(unk_token="[UNK]", fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    tr = trainers.BpeTrainer(vocab_size=1500, special_tokens=["[UNK]", "[SEP]"])
    t.train_from_iterator(texts, tr)
    t.add_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, normalized=True)])
    t.add_special_tokens([AddedToken("[PAGE]", lstrip=True, normalized=False)])
    return t


def cases(texts: list[str]) -> list[str]:
    out = [
        "",
        " ",
        "hello world",
        "  leading and trailing  ",
        "it's they're we've I'm you'll he'd 'S '''s",
        'tabs\tand\nnewlines\n\n\t\t[id] button "Go"',
        "non\u00a0breaking\u00a0space and \u2003em space \u3000 ideographic",
        "numbers 1234567 3.14 1e10 ٣٤ Ⅻ ½",
        "ünïcödé Ελληνικά русский 中文字符 日本語 한국어 🤖👍🏽 e\u0301",
        "İstanbul ΣΑΣ ǅ ﬁ ① ㍿",
        "special <|endoftext|> inside<|endoftext|>text",
        "mask <mask> here and  <mask>  there [PAGE] end   [PAGE]",
        "unknown chars: \u2603 \U0001f600 \x00\x01",
        "a" * 3000,
        "ab " * 500,
        "$12.50 — £9.99 €5,00 ¥100",
        "https://shop.example/c/shoes?size=42&color=blue#top",
        "\r\n\r\n  \n \t x",
        "IT'S WE'LL He'D 'RE 'Ll 12345678 x1y22z333 (hello) \tword  \n\n  word\r\n\r\nx ?!\n\n",
        "  \n  foo  bar\t\t\nbaz \u00a0\u00a0qux ..\r\n\r\n",
    ]
    for text in texts:
        out += [p for p in text.split("\n\n") if p.strip()][:8]
    return out


def main() -> None:
    texts = corpus()
    OUT.mkdir(parents=True, exist_ok=True)
    examples = cases(texts)
    toks = {
        "byte_bpe": byte_bpe(texts),
        "word_bpe": word_bpe(texts),
        "llama3_split": split_bpe(texts, LLAMA3, None),
        "qwen2_split": split_bpe(texts, QWEN2, normalizers.NFC()),
    }
    for name, tok in toks.items():
        tok.save(str(OUT / f"{name}.json"))
        want = [{"text": s, "ids": tok.encode(s, add_special_tokens=False).ids} for s in examples]
        (OUT / f"{name}.cases.json").write_text(json.dumps(want, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
