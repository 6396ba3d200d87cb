"""Speakable text, heard_text, chunking and earcons: pure, no clock."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgevoice.audio.speaking.earcons import Earcon, Earcons, earcon_pcm
from edgevoice.audio.speaking.heard import heard_part, heard_sentences, heard_text
from edgevoice.audio.speaking.playback import SegmentProgress, Speaker
from edgevoice.audio.speaking.tts import chunk_text, proportional_word_ends
from edgevoice.device.speaking.markdown import SpeakableSplitter, speakable, url_to_speech

pytestmark = pytest.mark.installed  # also run against the built wheel (image/board/installed.py)

MARKDOWN = """# Weather today
It is **sunny** and _warm_. See [the forecast](https://weather.example.com/x?y=1) for more.
Visit https://www.example.com/path. Then run `ls -la` or `for i in range(10): print(i)`.
- first *item*
* second item

```python
print("hello. world")
x = 1
```
| City | Temp |
|------|-----:|
| Oslo | 3 |
---
> Quoted text.
***Bold italic*** end. ![a cat](cat.png) sat."""

SPOKEN = [
    "Weather today",
    "It is sunny and warm.",
    "See the forecast for more.",
    "Visit example dot com.",
    "Then run ls -la or.",
    "first item",
    "second item",
    "City, Temp",
    "Oslo, 3",
    "Quoted text.",
    "Bold italic end.",
    "a cat sat.",
]


def test_markdown_becomes_speakable() -> None:
    assert speakable(MARKDOWN) == SPOKEN


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 7), min_size=1, max_size=12))
def test_markdown_split_across_deltas(sizes: list[int]) -> None:
    splitter = SpeakableSplitter()
    out: list[str] = []
    pos = index = 0
    while pos < len(MARKDOWN):
        size = sizes[index % len(sizes)]
        out += splitter.feed(MARKDOWN[pos : pos + size])
        pos += size
        index += 1
    assert out + splitter.flush() == SPOKEN


@pytest.mark.parametrize(
    ("url", "spoken"),
    [
        ("https://www.example.com/a/b?c=d", "example dot com"),
        ("http://docs.python.org.", "docs dot python dot org."),
        ("www.bbc.co.uk", "bbc dot co dot uk"),
    ],
)
def test_urls_read_as_domain(url: str, spoken: str) -> None:
    assert url_to_speech(url) == spoken


def test_no_url_spelled_out() -> None:
    for sentence in speakable("Go to https://a.example.org/very/long/path?q=1&x=2 now."):
        assert "/" not in sentence and "https" not in sentence


def _seg(text: str, total: int, played: int, word_ends: tuple[tuple[int, int], ...] = (),
         *, kind: str = "speech") -> SegmentProgress:
    return SegmentProgress("u", text, total, played, kind, word_ends, False, total)


def test_heard_uses_word_ends() -> None:
    text = "one two three"
    ends = ((3, 100), (7, 200), (13, 300))
    assert heard_part(text, 300, 0, ends) == ""
    assert heard_part(text, 300, 99, ends) == ""
    assert heard_part(text, 300, 100, ends) == "one"
    assert heard_part(text, 300, 250, ends) == "one two"
    assert heard_part(text, 300, 300, ends) == "one two three"


def test_heard_proportional_whole_words_only() -> None:
    text = "alpha beta gamma delta"  # 22 chars
    assert heard_part(text, 220, 50) == "alpha"  # 5 chars: "alpha" just fits
    assert heard_part(text, 220, 80) == "alpha"  # "alpha be": beta not finished
    assert heard_part(text, 220, 100) == "alpha beta"
    assert heard_part("你好世界", 400, 200) == "你好"


def test_heard_text_across_segments_and_earcons() -> None:
    progress = [
        _seg("", 50, 50, kind="earcon"),
        _seg("First sentence.", 100, 100),
        _seg("Second one here.", 160, 60, ((6, 50), (10, 90), (16, 160))),
        _seg("Third.", 80, 0),
    ]
    assert heard_text(progress) == "First sentence. Second"
    assert heard_sentences(progress) == 1


def test_heard_after_drop_is_not_the_whole_sentence() -> None:
    speaker = Speaker(10)
    speaker.enqueue(np.ones(100, np.int16), utterance_id="u", text="alpha beta gamma delta")
    for _ in range(3):
        speaker.next_period()
    speaker.set_output_latency(0)
    speaker.drop("u")
    # The truncated segment is fully "played" but was cut: only the words that fit count.
    (progress,) = speaker.progress("u")
    assert progress.dropped and progress.total == 30 and progress.queued == 100
    assert heard_text([progress]) == "alpha"


def test_chunk_text_cuts_at_clauses() -> None:
    text = ("When the rain stops, which should be around noon, we can go out; "
            "after that, if the wind drops, the boat trip is on")
    chunks = chunk_text(text, 60)
    assert all(len(c) <= 60 for c in chunks)
    assert " ".join(chunks) == text
    assert chunks[0].endswith(",") or chunks[0].endswith(";")
    assert chunk_text("Short one.", 60) == ["Short one."]


def test_proportional_word_ends() -> None:
    ends = proportional_word_ends("ab cd", 100, [1, 3])
    assert ends == ((2, 25), (5, 100))
    assert proportional_word_ends("你好", 100) == ((1, 50), (2, 100))


def test_earcons_deterministic_and_switchable() -> None:
    for kind in Earcon:
        pcm = earcon_pcm(kind)
        assert pcm.dtype == np.int16 and 0.03 * 16000 < len(pcm) < 0.5 * 16000
        assert np.array_equal(pcm, earcon_pcm(kind))
        assert abs(int(pcm[0])) < 50 and abs(int(pcm[-1])) < 50  # faded: no click
        assert 0.25 * 32768 < np.abs(pcm).max() <= 0.31 * 32768
    assert not np.array_equal(earcon_pcm(Earcon.WAKE), earcon_pcm(Earcon.ERROR))
    speaker = Speaker(160)
    earcons = Earcons(speaker, enabled=[Earcon.WAKE])
    assert earcons.play("wake") and not earcons.play(Earcon.ERROR)
    assert speaker.pending_samples() == len(earcon_pcm(Earcon.WAKE))
