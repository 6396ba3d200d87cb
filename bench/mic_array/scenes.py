"""Rooms for the array benchmark: pyroomacoustics image-source rooms, each a
talker (possibly moving between phrases), a TV playing speech, and diffuse noise, heard by
a rotated array. Generated from one seed and split once into tuning and validation sets."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from support.hearing_audio import espeak_speech, piper_speech

from edgevoice.audio.array.geometry import ArrayGeometry

RATE = 16000
TALKER_HEIGHT = 1.5
SEED = 2026
PHRASES = (
    "turn on the kitchen light",
    "what is the weather like today",
    "set a timer for ten minutes",
    "please call the front desk",
    "where is the nearest exit",
    "play some music in the living room",
    "how long until the next train",
    "open the door for the delivery",
    "what time is it in london",
    "remind me to water the plants",
    "is the museum open on sunday",
    "turn the volume down a little",
)
TV_TEXT = (
    "And now the evening news. Heavy rain is expected across the north tonight, with "
    "strong winds along the coast. In sport, the home team won their third match in a row. "
    "Traffic is slow on the ring road after an earlier accident near the bridge."
)
VOICES = ("en-us", "en-gb", "en-us+f3", "en-gb-x-rp", "en-us+m3", "en-029", "en-gb-scotland", "en-us+f4")
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Scene:
    index: int
    room_dim: tuple[float, float, float]
    rt60_s: float
    centre: tuple[float, float, float]
    rotation_deg: float
    talker_azimuths_deg: tuple[float, ...]  # in the array's frame, one per phrase
    talker_distance_m: float
    tv_azimuth_deg: float
    tv_distance_m: float
    sir_db: float
    snr_db: float
    voice: str
    phrases: tuple[str, ...]
    moving: bool = False
    noise_seed: int = field(default=0)


def _point(
    centre: tuple[float, float, float],
    azimuth_room_deg: float,
    distance: float,
    height: float,
    dim: tuple[float, float, float],
) -> list[float]:
    x = centre[0] + distance * math.cos(math.radians(azimuth_room_deg))
    y = centre[1] + distance * math.sin(math.radians(azimuth_room_deg))
    return [min(max(x, 0.3), dim[0] - 0.3), min(max(y, 0.3), dim[1] - 0.3), height]


def generate(count: int, seed: int = SEED) -> list[Scene]:
    rng = np.random.default_rng(seed)
    scenes = []
    for index in range(count):
        dim = (float(rng.uniform(4.0, 8.0)), float(rng.uniform(3.5, 6.0)), float(rng.uniform(2.4, 3.0)))
        rt60 = float(rng.uniform(0.2, 0.7))
        centre = (dim[0] / 2 + float(rng.uniform(-0.5, 0.5)), dim[1] / 2 + float(rng.uniform(-0.5, 0.5)), 1.0)
        moving = index % 4 == 3
        first = float(rng.uniform(0, 360))
        azimuths = (
            (first, (first + rng.uniform(60, 120)) % 360, (first + rng.uniform(150, 210)) % 360)
            if moving
            else (first,) * 3
        )
        tv = float((first + rng.uniform(60, 300)) % 360)
        if moving:  # keep the TV clear of every position the talker takes
            tv = float((first + 270 + rng.uniform(-20, 20)) % 360)
        picks = rng.choice(len(PHRASES), 3, replace=False)
        scenes.append(
            Scene(
                index=index,
                room_dim=dim,
                rt60_s=rt60,
                centre=centre,
                rotation_deg=float(rng.uniform(0, 360)),
                talker_azimuths_deg=tuple(float(a) for a in azimuths),
                talker_distance_m=float(rng.uniform(1.0, 2.0)),
                tv_azimuth_deg=tv,
                tv_distance_m=float(rng.uniform(1.5, 2.5)),
                sir_db=0.0 if index % 2 == 0 else 5.0,
                snr_db=20.0,
                voice=VOICES[index % len(VOICES)],
                phrases=tuple(PHRASES[i] for i in picks),
                moving=moving,
                noise_seed=int(rng.integers(1 << 30)),
            )
        )
    return scenes


def split(scenes: list[Scene], seed: int = SEED) -> tuple[list[Scene], list[Scene]]:
    """One fixed split: a third to tune on, the rest held back and only scored."""
    order = np.random.default_rng([seed, 7]).permutation(len(scenes))
    cut = len(scenes) // 3
    tuning = sorted((scenes[i] for i in order[:cut]), key=lambda s: s.index)
    validation = sorted((scenes[i] for i in order[cut:]), key=lambda s: s.index)
    return tuning, validation


@lru_cache(maxsize=64)
def _speech(text: str, voice: str) -> Floats:
    return espeak_speech(text, voice=voice, speed=150).astype(np.float64)


@lru_cache(maxsize=1)
def _tv() -> Floats:
    return piper_speech(TV_TEXT).astype(np.float64)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One scene heard by one array: each component per mic, and the talker's timeline."""

    target: Floats  # (samples, mics)
    target_early: Floats  # the talker's direct sound only (the first 2 ms of each response)
    tv: Floats
    noise: Floats
    segments: tuple[tuple[int, int, float], ...]  # (start, end, true azimuth in the array frame)

    @property
    def mixture(self) -> Floats:
        out: Floats = self.target + self.tv + self.noise
        return out


def _rir_signal(
    room_dim: tuple[float, float, float],
    rt60: float,
    mics: Floats,
    *,
    source: list[float],
    signal: Floats,
    length: int,
    early_ms: float | None = None,
) -> Floats:
    import pyroomacoustics as pra
    from scipy.signal import fftconvolve

    # image sources only (pyroomacoustics' ray tracing is random from run to run), up to
    # order 40: the tail beyond it is > 35 dB down in these rooms
    absorption, order = pra.inverse_sabine(rt60, list(room_dim))
    room = pra.ShoeBox(
        list(room_dim),
        fs=RATE,
        materials=pra.Material(absorption),
        max_order=min(order, 40),
        air_absorption=False,
    )
    room.add_microphone_array(mics)
    room.add_source(source)
    room.compute_rir()
    out = np.zeros((length, mics.shape[1]))
    first = min(int(np.argmax(np.abs(np.asarray(room.rir[m][0])))) for m in range(mics.shape[1]))
    for m in range(mics.shape[1]):
        rir = np.asarray(room.rir[m][0])
        if early_ms is not None:
            rir = rir[: first + int(early_ms * RATE / 1000)]
        wet = fftconvolve(signal, rir)[:length]
        out[: len(wet), m] = wet
    return out


def render(
    scene: Scene, geometry: ArrayGeometry, speech: Callable[[str, str], Floats] | None = None
) -> Rendered:
    """The scene heard by ``geometry``; ``speech(text, voice)`` says each phrase (espeak-ng
    by default)."""
    rotation = math.radians(scene.rotation_deg)
    rot = np.array(
        [[math.cos(rotation), -math.sin(rotation), 0], [math.sin(rotation), math.cos(rotation), 0], [0, 0, 1]]
    )
    mics = (geometry.centred() @ rot.T + np.array(scene.centre)).T  # (3, N)
    gap = int(1.2 * RATE)
    pieces = [(speech or _speech)(text, scene.voice) for text in scene.phrases]
    length = gap + sum(len(p) + gap for p in pieces)
    target = np.zeros((length, geometry.mic_count))
    early = np.zeros_like(target)
    segments = []
    cursor = gap
    for piece, azimuth in zip(pieces, scene.talker_azimuths_deg, strict=True):
        dry = np.zeros(length)
        dry[cursor : cursor + len(piece)] = piece
        position = _point(
            scene.centre, azimuth + scene.rotation_deg, scene.talker_distance_m, TALKER_HEIGHT, scene.room_dim
        )
        true_azimuth = math.degrees(math.atan2(position[1] - scene.centre[1], position[0] - scene.centre[0]))
        target += _rir_signal(scene.room_dim, scene.rt60_s, mics, source=position, signal=dry, length=length)
        early += _rir_signal(
            scene.room_dim, scene.rt60_s, mics, source=position, signal=dry, length=length, early_ms=2.0
        )
        segments.append((cursor, cursor + len(piece), (true_azimuth - scene.rotation_deg) % 360.0))
        cursor += len(piece) + gap
    tv_dry = np.resize(_tv(), length)
    tv_position = _point(
        scene.centre, scene.tv_azimuth_deg + scene.rotation_deg, scene.tv_distance_m, 1.0, scene.room_dim
    )
    tv = _rir_signal(scene.room_dim, scene.rt60_s, mics, source=tv_position, signal=tv_dry, length=length)
    rng = np.random.default_rng(scene.noise_seed)
    noise = np.zeros_like(target)
    for corner in (
        (0.3, 0.3),
        (scene.room_dim[0] - 0.3, 0.3),
        (0.3, scene.room_dim[1] - 0.3),
        (scene.room_dim[0] - 0.3, scene.room_dim[1] - 0.3),
    ):
        white = rng.standard_normal(length)
        pinkish = np.cumsum(white) * 0.02  # a fan-like low-heavy noise
        pinkish -= np.convolve(pinkish, np.ones(400) / 400, mode="same")
        noise += _rir_signal(
            scene.room_dim,
            scene.rt60_s,
            mics,
            source=[*corner, 2.0],
            signal=pinkish + 0.3 * white,
            length=length,
        )
    active = np.zeros(length, dtype=bool)
    for start, end, _ in segments:
        active[start:end] = True
    target_power = float(np.mean(target[active] ** 2))
    tv *= math.sqrt(target_power / (float(np.mean(tv[active] ** 2)) * 10 ** (scene.sir_db / 10)))
    noise *= math.sqrt(target_power / (float(np.mean(noise[active] ** 2)) * 10 ** (scene.snr_db / 10)))
    peak = float(np.max(np.abs(target + tv + noise)))
    scale = 0.5 * 32767.0 / peak
    return Rendered(target * scale, early * scale, tv * scale, noise * scale, tuple(segments))
