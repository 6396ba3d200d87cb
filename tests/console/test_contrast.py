"""The console's colours meet WCAG AA (4.5:1 for text) in both themes."""

from __future__ import annotations

import re
from importlib import resources

import pytest

CSS = resources.files("edgevoice.device.console.static").joinpath("console.css").read_text()
STATES = ("idle", "listening", "thinking", "speaking", "muted")
PAIRS = [("text", "bg"), ("text", "panel"), ("muted", "bg"), ("muted", "panel"), ("pending", "bg"),
         ("heard-text", "heard-bg"), ("struck", "bg"), ("button-text", "button-bg"),
         ("primary-text", "primary-bg"), ("text", "button-bg"),
         *[("state-text", f"state-{s}-bg") for s in STATES]]


def _block(selector: str) -> dict[str, str]:
    start = CSS.index(selector + " {")
    body = CSS[start : CSS.index("}", start)]
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", body))


THEMES = {"dark": _block(":root"), "light": _block(':root[data-theme="light"]')}


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_wcag_reference_values() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


@pytest.mark.parametrize("theme", THEMES)
def test_every_text_colour_meets_wcag_aa(theme: str) -> None:
    colours = THEMES[theme]
    low = {f"{fg} on {bg}": round(contrast(colours[fg], colours[bg]), 2) for fg, bg in PAIRS
           if contrast(colours[fg], colours[bg]) < 4.5}
    assert not low, f"{theme}: below 4.5:1: {low}"


def test_both_themes_set_every_colour() -> None:
    assert set(THEMES["dark"]) == set(THEMES["light"]) and len(THEMES["dark"]) >= 20
