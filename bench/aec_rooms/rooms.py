"""A corpus of 60 echo rooms the canceller was never tuned on (issue 18), split once.

Every room is drawn from ``SEED``: its parameters (``room_specs``) cost nothing to make,
its audio (``make_room``) is built from them with pyroomacoustics and the speech helpers
of ``bench/aec/scenarios.py`` (piper, espeak-ng, the image-method RIR, their cache).
The split into a tuning set and a validation set is drawn once from ``SPLIT_SEED`` and
written down in ``TUNING_ROOMS``: ``split()`` checks the draw still gives it, so neither a
changed seed nor a changed random generator can move a room from one set to the other.
Tune on the tuning rooms only; the validation rooms' figures are the ones that count.

What a room draws (categorical conditions are dealt out in balanced shuffles, so each
occurs 12-30 times over the 60 rooms; the numbers are uniform within their ranges):
- size class: bathroom, bedroom/kitchen, living room, hall; T60 0.15-0.9 s (its lower
  end raised where the room is too big to be that dead: Sabine absorption <= 0.9);
- loudspeaker 3-30 cm from the mic, aimed 0-180 degrees away from it, a frequency-
  independent cardioid-family pattern (p 0.55-0.9: 0.1-0.8 of the on-axis gain behind);
- bulk delay 0-300 ms; clock drift none / 5-50 / 75-150 ppm, either sign (the reference
  resampled band-limited, ``clock.py``);
- the small loudspeaker: a 150-300 Hz high-pass always; a resonance (+4 to +10 dB at
  250-900 Hz, Q 1.5-4) in half the rooms, before the clipping; clipping none / soft
  (tanh, drive 0.5-2.5) / hard (at 60-95 % of the reference's peak): the distortion sits
  13-60 dB under the loudspeaker's linear output (``loudspeaker_sdr_db``; bench/aec's
  mild clipping: 26 dB), the resonance driving the cone into it harder;
- an echo-path change at 17 s while the device talks, over 0.3 s: the device moved
  0.3-1.5 m and turned; a door opened (one wall 1-4 m further away, T60 x 0.8-1.25);
  a person in the direct path (the direct sound's first 2 ms 6-15 dB down and low-passed
  at 1-3 kHz);
- noise 20-50 dB below the echo: babble (six voices through the room), fan (a blade tone
  with harmonics over low-passed noise), street (rumble with passing cars); a white floor
  60 dB below the echo;
- double talk at -15 to +5 dB signal-to-echo, the person 0.8-3 m away, speaking in the
  piper voice (the device's own: the hardest) or one of four espeak-ng voices.

Timeline (seconds): 0-8 far end alone | 8-12 double talk | 12-15 near end alone (scored
from 12.5) | 15-23 far end alone (scored from 16, when the near end's reverberation has
died away), the echo path changes at 17.
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "aec"))
sys.path.insert(1, str(Path(__file__).resolve().parent))

import clock  # type: ignore[import-not-found]  # beside this file
import scenarios  # type: ignore[import-not-found]  # bench/aec, put on the path above
from scenarios import (  # type: ignore[import-not-found]  # bench/aec, put on the path above
    CACHE,
    ESPEAK_VOICES,
    NEAR_TEXTS,
    RATE,
    _fit,
    _rir,
    espeak_speech,
    far_end_reference,
    piper_speech,
)

SEED = 18  # issue 18
SPLIT_SEED = 1018
N_ROOMS = 60
# drawn once from SPLIT_SEED (``_draw_split``) and written down here so it cannot drift
TUNING_ROOMS: tuple[int, ...] = (
    0,
    1,
    2,
    5,
    6,
    7,
    8,
    10,
    11,
    15,
    16,
    19,
    20,
    21,
    27,
    28,
    29,
    33,
    35,
    36,
    37,
    39,
    42,
    43,
    45,
    46,
    49,
    54,
    56,
    57,
)

T_DT, T_NA, T_FAR2, T_CHG, T_END = 8.0, 12.0, 15.0, 17.0, 23.0
CHANGE_S = 0.3  # the new echo path fades in over this long
AFTER_S = 3.0

SIZE_CLASSES: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float]]] = {
    "bathroom": ((1.6, 2.5), (1.5, 2.2), (2.2, 2.5)),
    "bedroom": ((2.5, 4.5), (2.5, 4.0), (2.4, 2.7)),
    "living": ((4.0, 7.0), (3.5, 6.0), (2.4, 3.0)),
    "hall": ((10.0, 25.0), (8.0, 15.0), (4.0, 7.0)),
}
CLIPPING = ("none", "soft", "hard")
CHANGES = ("moved", "door", "person")
NOISES = ("babble", "fan", "street")
DRIFTS = ("none", "small", "large")
NEAR_VOICES = ("piper", *ESPEAK_VOICES)
BABBLE_VOICES = 6


@dataclass(frozen=True)
class RoomSpec:
    """One room's parameters; everything ``make_room`` needs besides the speech."""

    index: int
    size_class: str
    room_dim: tuple[float, float, float]
    t60: float
    distance_m: float
    aim_deg: float  # 0: the loudspeaker faces the mic; 180: faces away
    directivity_p: float  # cardioid family: 1 omni, 0.5 cardioid
    delay_ms: float
    drift_ppm: float
    highpass_hz: float
    resonance_hz: float  # 0: no resonance
    resonance_db: float
    resonance_q: float
    clipping: str
    clip_amount: float  # soft: tanh drive; hard: clip level / reference peak
    change: str
    change_amount: float  # moved: metres; door: metres of wall; person: dB of shadow
    change_t60_factor: float  # door only
    shadow_cutoff_hz: float  # person only
    noise: str
    noise_db: float  # below the echo
    ser_db: float
    near_voice: str
    near_distance_m: float
    texts: tuple[int, int]  # NEAR_TEXTS for double talk and near end alone
    mic_pos: tuple[float, float, float]
    azimuth_deg: float  # direction mic -> loudspeaker
    elevation_deg: float  # of the loudspeaker above the mic

    @property
    def name(self) -> str:
        return f"r{self.index:02d}"

    @property
    def drift_class(self) -> str:
        mag = abs(self.drift_ppm)
        return "none" if mag == 0 else "small" if mag <= 50 else "large"

    @property
    def noise_band(self) -> str:
        return _band(self.noise_db, (30, 40), "dB below the echo")

    @property
    def distance_band(self) -> str:
        return _band(100 * self.distance_m, (10, 20), "cm")

    @property
    def aim_band(self) -> str:
        return "towards the mic" if self.aim_deg < 60 else "sideways" if self.aim_deg < 120 else "away"

    @property
    def delay_band(self) -> str:
        return _band(self.delay_ms, (100, 200), "ms")

    @property
    def t60_band(self) -> str:
        return _band(self.t60, (0.4, 0.65), "s")

    @property
    def ser_band(self) -> str:
        return _band(self.ser_db, (-8, -1), "dB")

    def conditions(self) -> str:
        """One line naming what makes this room hard."""
        res = (
            f", resonance {self.resonance_hz:.0f} Hz +{self.resonance_db:.0f} dB" if self.resonance_hz else ""
        )
        clip = "" if self.clipping == "none" else f", {self.clipping} clipping ({self.clip_amount:.2f})"
        return (
            f"{self.size_class} {self.room_dim[0]:.1f}x{self.room_dim[1]:.1f}x{self.room_dim[2]:.1f} m, "
            f"T60 {self.t60:.2f} s, {100 * self.distance_m:.0f} cm aimed {self.aim_deg:.0f} deg "
            f"(p {self.directivity_p:.2f}), delay {self.delay_ms:.0f} ms, drift {self.drift_ppm:+.0f} ppm"
            f"{res}{clip}, change: {self.change} ({self.change_amount:.1f}), "
            f"{self.noise} noise -{self.noise_db:.0f} dB, SER {self.ser_db:+.1f} dB ({self.near_voice})"
        )


@dataclass(frozen=True)
class Room:
    spec: RoomSpec
    mic: np.ndarray  # float, echo + near + noise
    near_only: np.ndarray  # near + noise: the mic with the loudspeaker silent
    reference: np.ndarray  # what the loudspeaker was sent
    near_clean: np.ndarray  # the near end alone at the mic, without noise
    # from 1 s after the near end's last words (cut at 15 s), once their reverberation has died
    far_alone: tuple[tuple[float, float], ...] = (
        (2.0, T_DT),
        (T_FAR2 + 1.0, T_CHG),
        (T_CHG + AFTER_S, T_END),
    )
    after_change: tuple[float, float] = (T_CHG, T_CHG + AFTER_S)
    double_talk: tuple[float, float] = (T_DT, T_NA)
    near_alone: tuple[float, float] = (T_NA + 0.5, T_FAR2)


def _band(value: float, edges: tuple[float, float], unit: str) -> str:
    low, high = edges
    return (
        f"< {low:g} {unit}"
        if value < low
        else f"< {high:g} {unit}"
        if value < high
        else f">= {high:g} {unit}"
    )


def _deal(rng: np.random.Generator, kinds: tuple[str, ...]) -> list[str]:
    """``N_ROOMS`` labels, each kind equally often (±1), in a random order."""
    labels = [kinds[i % len(kinds)] for i in range(N_ROOMS)]
    return [labels[i] for i in rng.permutation(N_ROOMS)]


def _min_t60(dim: tuple[float, float, float]) -> float:
    """The deadest T60 Sabine allows with absorption 0.9 (a hall cannot be a studio)."""
    vol = dim[0] * dim[1] * dim[2]
    surface = 2 * (dim[0] * dim[1] + dim[0] * dim[2] + dim[1] * dim[2])
    return 0.161 * vol / (0.9 * surface)


def room_specs(seed: int = SEED) -> list[RoomSpec]:
    """All rooms' parameters, in index order (cheap: no audio)."""
    deal_rng = np.random.default_rng([seed, 0])
    sizes = _deal(deal_rng, tuple(SIZE_CLASSES))
    clippings = _deal(deal_rng, CLIPPING)
    changes = _deal(deal_rng, CHANGES)
    noises = _deal(deal_rng, NOISES)
    drifts = _deal(deal_rng, DRIFTS)
    voices = _deal(deal_rng, NEAR_VOICES)
    resonant = _deal(deal_rng, ("yes", "no"))
    signs = _deal(deal_rng, ("+", "-"))
    specs = []
    for i in range(N_ROOMS):
        rng = np.random.default_rng([seed, 1, i])
        dim = tuple(float(rng.uniform(*r)) for r in SIZE_CLASSES[sizes[i]])
        assert len(dim) == 3
        t60 = float(rng.uniform(max(0.15, _min_t60(dim)), 0.9))
        margin = 0.35
        mic_pos = (
            float(rng.uniform(margin, dim[0] - margin)),
            float(rng.uniform(margin, dim[1] - margin)),
            float(rng.uniform(0.7, 1.2)),
        )
        drift_mag = {"none": 0.0, "small": float(rng.uniform(5, 50)), "large": float(rng.uniform(75, 150))}
        clip = clippings[i]
        change = changes[i]
        specs.append(
            RoomSpec(
                index=i,
                size_class=sizes[i],
                room_dim=dim,
                t60=t60,
                distance_m=float(rng.uniform(0.03, 0.30)),
                aim_deg=float(rng.uniform(0, 180)),
                directivity_p=float(rng.uniform(0.55, 0.9)),
                delay_ms=float(rng.uniform(0, 300)),
                drift_ppm=drift_mag[drifts[i]] * (1 if signs[i] == "+" else -1),
                highpass_hz=float(rng.uniform(150, 300)),
                resonance_hz=float(rng.uniform(250, 900)) if resonant[i] == "yes" else 0.0,
                resonance_db=float(rng.uniform(4, 10)),
                resonance_q=float(rng.uniform(1.5, 4)),
                clipping=clip,
                clip_amount={
                    "none": 0.0,
                    "soft": float(rng.uniform(0.5, 2.5)),
                    "hard": float(rng.uniform(0.6, 0.95)),
                }[clip],
                change=change,
                change_amount={
                    "moved": float(rng.uniform(0.3, 1.5)),
                    "door": float(rng.uniform(1, 4)),
                    "person": float(rng.uniform(6, 15)),
                }[change],
                change_t60_factor=float(rng.uniform(0.8, 1.25)),
                shadow_cutoff_hz=float(rng.uniform(1000, 3000)),
                noise=noises[i],
                noise_db=float(rng.uniform(20, 50)),
                ser_db=float(rng.uniform(-15, 5)),
                near_voice=voices[i],
                near_distance_m=float(rng.uniform(0.8, 3.0)),
                texts=tuple(int(x) for x in rng.choice(len(NEAR_TEXTS), 2, replace=False)),  # type: ignore[arg-type]
                mic_pos=mic_pos,
                azimuth_deg=float(rng.uniform(0, 360)),
                elevation_deg=float(rng.uniform(-20, 20)),
            )
        )
    return specs


def _draw_split() -> tuple[int, ...]:
    return tuple(
        sorted(int(x) for x in np.random.default_rng(SPLIT_SEED).permutation(N_ROOMS)[: N_ROOMS // 2])
    )


def split() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(tuning, validation) room indices: the draw from ``SPLIT_SEED``, which must still
    be the one written down in ``TUNING_ROOMS``."""
    drawn = _draw_split()
    if drawn != TUNING_ROOMS:
        raise RuntimeError(f"the split drawn from SPLIT_SEED {drawn} is not TUNING_ROOMS: it must not change")
    return TUNING_ROOMS, tuple(i for i in range(N_ROOMS) if i not in TUNING_ROOMS)


# --- audio -------------------------------------------------------------------------


def _clamp(pos: list[float], dim: tuple[float, ...], margin: float = 0.05) -> list[float]:
    return [min(max(p, margin), d - margin) for p, d in zip(pos, dim, strict=True)]


def _device_rir(
    spec: RoomSpec,
    dim: tuple[float, float, float],
    t60: float,
    mic: tuple[float, float, float],
    azimuth_deg: float,
) -> np.ndarray:
    """The loudspeaker-to-mic RIR of the device at ``mic``, its loudspeaker in direction
    ``azimuth_deg``, aimed ``spec.aim_deg`` away from facing the mic."""
    from pyroomacoustics.directivities import CardioidFamily, DirectionVector

    az = math.radians(azimuth_deg)
    elev = math.radians(spec.elevation_deg)
    d = spec.distance_m
    src = [
        mic[0] + d * math.cos(az) * math.cos(elev),
        mic[1] + d * math.sin(az) * math.cos(elev),
        mic[2] + d * math.sin(elev),
    ]
    src = _clamp(src, dim)
    facing_mic = (azimuth_deg + 180.0) % 360.0
    directivity = CardioidFamily(
        orientation=DirectionVector(
            azimuth=(facing_mic + spec.aim_deg) % 360.0, colatitude=90.0, degrees=True
        ),
        p=spec.directivity_p,
    )
    rir: np.ndarray = _rir(list(dim), t60, src, list(mic), directivity=directivity)
    return rir


def _biquad_peak(f0: float, gain_db: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """RBJ peaking equaliser."""
    a = 10 ** (gain_db / 40)
    w0 = 2 * math.pi * f0 / RATE
    alpha = math.sin(w0) / (2 * q)
    b = np.array([1 + alpha * a, -2 * math.cos(w0), 1 - alpha * a])
    den = np.array([1 + alpha / a, -2 * math.cos(w0), 1 - alpha / a])
    return b / den[0], den / den[0]


def loudspeaker(spec: RoomSpec, reference: np.ndarray) -> np.ndarray:
    """What the small loudspeaker radiates for ``reference``: no bass, maybe a resonance,
    then the clipping (the resonance drives the cone into it harder)."""
    from scipy.signal import butter, lfilter  # type: ignore[import-untyped]

    b, a = butter(2, spec.highpass_hz / (RATE / 2), btype="high")
    out = np.asarray(lfilter(b, a, reference))
    if spec.resonance_hz:
        b, a = _biquad_peak(spec.resonance_hz, spec.resonance_db, spec.resonance_q)
        out = np.asarray(lfilter(b, a, out))
    peak = float(np.max(np.abs(reference))) + 1e-12
    if spec.clipping == "soft":
        drive = spec.clip_amount / peak
        out = np.tanh(drive * out) / math.tanh(spec.clip_amount) * peak
    elif spec.clipping == "hard":
        out = np.clip(out, -spec.clip_amount * peak, spec.clip_amount * peak)
    return out


def loudspeaker_sdr_db(spec: RoomSpec, reference: np.ndarray) -> float:
    """How far the loudspeaker's distortion sits below its linear part (dB): the same
    loudspeaker without clipping, scaled to fit best, against what is left. What a linear
    filter alone could remove at most, drift and noise aside."""
    out = loudspeaker(spec, reference)
    linear = loudspeaker(replace(spec, clipping="none"), reference)
    gain = float(out @ linear) / float(linear @ linear)
    rest = out - gain * linear
    return 10.0 * math.log10(float(linear @ linear) * gain**2 / max(float(rest @ rest), 1e-20))


def _shadow(rir: np.ndarray, spec: RoomSpec) -> np.ndarray:
    """A person in the direct path: its first 2 ms down ``change_amount`` dB, low-passed."""
    from scipy.signal import butter, lfilter

    direct = int(np.argmax(np.abs(rir)))
    end = direct + int(0.002 * RATE)
    b, a = butter(1, spec.shadow_cutoff_hz / (RATE / 2))
    head = np.asarray(lfilter(b, a, rir[:end])) * 10 ** (-spec.change_amount / 20)
    return np.concatenate((head, rir[end:]))


def _changed_rir(spec: RoomSpec, rir1: np.ndarray) -> np.ndarray:
    dim = spec.room_dim
    if spec.change == "person":
        return _shadow(rir1, spec)
    if spec.change == "door":
        # the wall behind the device opens onto more room: its reflection comes later and
        # the room rings differently; the device itself stays put
        wider = (dim[0] + spec.change_amount, dim[1], dim[2])
        return _device_rir(
            spec, wider, min(0.95, spec.t60 * spec.change_t60_factor), spec.mic_pos, spec.azimuth_deg
        )
    # moved: the same device (same geometry) elsewhere in the room, turned
    rng = np.random.default_rng([SEED, 2, spec.index])
    ang = rng.uniform(0, 2 * np.pi)
    moved = _clamp(
        [
            spec.mic_pos[0] + spec.change_amount * math.cos(ang),
            spec.mic_pos[1] + spec.change_amount * math.sin(ang),
            spec.mic_pos[2],
        ],
        dim,
        0.35,
    )
    turn = float(rng.uniform(45, 180))
    return _device_rir(spec, dim, spec.t60, (moved[0], moved[1], moved[2]), spec.azimuth_deg + turn)


def _level(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2))) + 1e-12


def _noise(spec: RoomSpec, total: int, rng: np.random.Generator) -> np.ndarray:
    from scipy.signal import butter, fftconvolve, lfilter

    t = np.arange(total) / RATE
    if spec.noise == "babble":
        voices = [*ESPEAK_VOICES, "en-us+m1", "en+f4"][:BABBLE_VOICES]
        babble = np.zeros(total)
        for k, voice in enumerate(voices):
            talk = np.concatenate(
                [espeak_speech(NEAR_TEXTS[(k + j) % len(NEAR_TEXTS)], voice) for j in range(4)]
            )
            talk = np.roll(np.tile(talk, int(np.ceil(total / len(talk)))), int(rng.integers(0, len(talk))))[
                :total
            ]
            babble += talk / _level(talk)
        pos = [spec.room_dim[0] * 0.8, spec.room_dim[1] * 0.2, 1.5]
        return np.asarray(fftconvolve(babble, _rir(list(spec.room_dim), spec.t60, pos, list(spec.mic_pos))))[
            :total
        ]
    if spec.noise == "fan":
        b, a = butter(1, float(rng.uniform(400, 1500)) / (RATE / 2))
        hiss = np.asarray(lfilter(b, a, rng.standard_normal(total)))
        blade = float(rng.uniform(40, 120))
        tone = sum((0.5**h) * np.sin(2 * np.pi * blade * (h + 1) * t + rng.uniform(0, 6)) for h in range(4))
        tone = tone * (1 + 0.1 * np.sin(2 * np.pi * 0.3 * t))
        return np.asarray(hiss / _level(hiss) + 0.7 * tone / _level(tone))
    # street: low rumble, cars passing every few seconds, some broadband hiss
    b, a = butter(2, 250 / (RATE / 2))
    rumble = np.asarray(lfilter(b, a, rng.standard_normal(total)))
    env = np.full(total, 0.3)
    for centre in np.cumsum(rng.uniform(3, 8, size=8)):
        env += np.exp(-0.5 * ((t - centre) / rng.uniform(0.8, 2.0)) ** 2)
    b, a = butter(1, 3000 / (RATE / 2))
    hiss = np.asarray(lfilter(b, a, rng.standard_normal(total)))
    return np.asarray(rumble / _level(rumble) * env + 0.3 * hiss / _level(hiss) * env)


def _near_speech(spec: RoomSpec, text: int) -> np.ndarray:
    if spec.near_voice == "piper":
        speech: np.ndarray = piper_speech(NEAR_TEXTS[text])
    else:
        speech = espeak_speech(NEAR_TEXTS[text], spec.near_voice)
    return speech


def make_room(spec: RoomSpec, *, seed: int = SEED) -> Room:
    from scipy.signal import fftconvolve

    rng = np.random.default_rng([seed, 3, spec.index])
    total = int(T_END * RATE)
    rir1 = _device_rir(spec, spec.room_dim, spec.t60, spec.mic_pos, spec.azimuth_deg)
    rir2 = _changed_rir(spec, rir1)

    reference = far_end_reference(rng, total, silent_s=(T_NA, T_FAR2))  # the near end alone

    played = loudspeaker(spec, reference)
    played = clock.play_at_rate(played, spec.drift_ppm)  # the loudspeaker's clock, band-limited
    bulk = int(spec.delay_ms * RATE / 1000)
    played = np.concatenate((np.zeros(bulk), played))[:total]

    echo1 = np.asarray(fftconvolve(played, rir1))[:total]
    echo2 = np.asarray(fftconvolve(played, rir2))[:total]
    fade = np.clip((np.arange(total) / RATE - T_CHG) / CHANGE_S, 0.0, 1.0)
    echo = echo1 * (1 - fade) + echo2 * fade
    echo_level = _level(echo[int(2 * RATE) : int(T_DT * RATE)])

    near = np.zeros(total)
    seg_dt = _fit(_near_speech(spec, spec.texts[0]), int((T_NA - T_DT) * RATE))
    seg_na = _fit(_near_speech(spec, spec.texts[1]), int((T_FAR2 - T_NA) * RATE))
    near[int(T_DT * RATE) : int(T_NA * RATE)] = seg_dt
    near[int(T_NA * RATE) : int(T_FAR2 * RATE)] = seg_na
    az = rng.uniform(0, 2 * np.pi)
    person = _clamp(
        [
            spec.mic_pos[0] + spec.near_distance_m * math.cos(az),
            spec.mic_pos[1] + spec.near_distance_m * math.sin(az),
            1.5,
        ],
        spec.room_dim,
        0.2,
    )
    near = np.asarray(fftconvolve(near, _rir(list(spec.room_dim), spec.t60, person, list(spec.mic_pos))))[
        :total
    ]
    dt = near[int(T_DT * RATE) : int(T_NA * RATE)]
    near *= echo_level * 10 ** (spec.ser_db / 20) / _level(dt[np.abs(seg_dt) > 0])

    noise = _noise(spec, total, rng)
    noise *= echo_level * 10 ** (-spec.noise_db / 20) / _level(noise)
    noise += rng.standard_normal(total) * echo_level * 10 ** (-60 / 20)

    mic = echo + near + noise
    gain = 0.7 / float(np.max(np.abs(mic)))  # the mic's gain staging: no clipping at the ADC
    return Room(
        spec=spec,
        mic=mic * gain,
        near_only=(near + noise) * gain,
        reference=reference,
        near_clean=near * gain,
    )


def spec_key(spec: RoomSpec) -> str:
    """A cache key: the parameters and the text of this file and of the two it builds on
    (a changed generator, or changed speech, re-makes)."""
    sources = (__file__, clock.__file__, scenarios.__file__)
    text = b"".join(Path(f).read_bytes() for f in sources) + repr(asdict(spec)).encode()
    return hashlib.sha1(text).hexdigest()[:16]


def cached_room(spec: RoomSpec) -> Room:
    """``make_room``, cached (float32) beside bench/aec's speech cache; a fresh room is
    read back from its file too, so the first run and later ones score the same input."""
    path = CACHE / "rooms" / f"{spec.name}-{spec_key(spec)}.npz"
    if not path.exists():
        room = make_room(spec)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez(tmp, **{k: getattr(room, k).astype(np.float32) for k in _SIGNALS})
        tmp.replace(path)
    with np.load(path) as data:
        return Room(spec=spec, **{k: data[k].astype(np.float64) for k in _SIGNALS})


_SIGNALS = ("mic", "near_only", "reference", "near_clean")
