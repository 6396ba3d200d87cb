"""``edgevoice array doa|beam``: direction of arrival and beamforming on recordings.

``edgevoice array doa FILE.wav --geometry G [--json]`` prints where each speech segment of
a multi-channel recording came from: azimuth in degrees, counter-clockwise from the
array's +x axis in the array's plane. Segments are found by the configured VAD on the
channels' average. ``--json`` prints ``{"geometry", "segments": [{"start_s", "end_s",
"direction_deg", "confidence"}]}``.

``edgevoice array beam IN.wav OUT.wav --geometry G [--toward DEG] [--beam mvdr|delay-and-sum]``
writes the beamformed mono: steered at ``--toward``, or at each segment's talker as the
daemon would be.

``--geometry`` is a preset name or a JSON list of ``[x, y, z]`` mic positions in metres,
in the recording's channel order.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgevoice.audio.array.frontend import ArrayFrontEnd, ArraySettings, SegmentEstimate
from edgevoice.audio.array.geometry import PRESETS, ArrayGeometry, parse_geometry
from edgevoice.audio.array.stft import frames_of
from edgevoice.audio.frames import SAMPLE_RATE, to_int16
from edgevoice.audio.io.wav import WavFormatError, read_wav, write_wav
from edgevoice.device.assembly.hearing import build_vad
from edgevoice.device.cli.common import EXIT_OK, add_common_options, load, print_json

HOP = 160


def register(sub: Any) -> None:
    parser = sub.add_parser("array", help="direction of arrival and beamforming on multi-channel recordings")
    actions = parser.add_subparsers(dest="array_command", metavar="ACTION", required=True)
    geometry_help = (
        f"a preset ({', '.join(sorted(PRESETS))}) or a JSON list of [x, y, z] mic positions "
        "in metres, in the recording's channel order"
    )
    doa = actions.add_parser("doa", help="the direction of each speech segment of a recording")
    doa.add_argument("file", type=Path, metavar="FILE.wav")
    doa.add_argument("--geometry", required=True, help=geometry_help)
    add_common_options(doa, json_output=True)
    doa.set_defaults(func=_doa)
    beam = actions.add_parser("beam", help="write the beamformed mono of a recording")
    beam.add_argument("input", type=Path, metavar="IN.wav")
    beam.add_argument("output", type=Path, metavar="OUT.wav")
    beam.add_argument("--geometry", required=True, help=geometry_help)
    beam.add_argument("--toward", type=float, metavar="DEG", help="steer here instead of at each talker")
    beam.add_argument("--beam", choices=("mvdr", "delay-and-sum"), default="mvdr")
    add_common_options(beam, json_output=True)
    beam.set_defaults(func=_beam)


def _recording(path: Path, geometry: ArrayGeometry) -> npt.NDArray[np.int16]:
    frames, rate = read_wav(path, rate=None, mono=False)
    if rate != SAMPLE_RATE:
        raise WavFormatError(
            f"{path}: {rate} Hz; array processing runs at {SAMPLE_RATE} Hz: "
            f"convert it with 'sox {path} -r {SAMPLE_RATE} out.wav'"
        )
    channels = 1 if frames.ndim == 1 else frames.shape[1]
    geometry.check_channels(channels)
    return frames.reshape(-1, channels)


def _run(
    args: argparse.Namespace,
    settings: ArraySettings,
) -> tuple[ArrayGeometry, list[SegmentEstimate], list[tuple[float, float]], npt.NDArray[np.float64]]:
    geometry = parse_geometry(args.geometry)
    frames = _recording(args.file if hasattr(args, "file") else args.input, geometry)
    loaded = load(args)
    vad = build_vad(loaded.config.vad, loaded.config.models.dir or None)
    front = ArrayFrontEnd(geometry, settings, hop=HOP, rate=SAMPLE_RATE)
    estimates: list[SegmentEstimate] = []
    spans: list[tuple[float, float]] = []
    speech = False
    start_s = 0.0
    out: list[npt.NDArray[np.float64]] = []
    for index, period in enumerate(frames_of(frames, HOP)):
        was_speech = speech
        for window in vad.process(np.ascontiguousarray(period.mean(axis=1).astype(np.int16))):
            speech = window.speech
        if speech and not was_speech:
            start_s = index * HOP / SAMPLE_RATE
        out.append(front.process(period, speech))
        if was_speech and not speech and front.last_segment is not None:
            estimates.append(front.last_segment)
            spans.append((start_s, index * HOP / SAMPLE_RATE))
    final = front.end_of_input()
    if final is not None:
        estimates.append(final)
        spans.append((start_s, len(frames) / SAMPLE_RATE))
    latency = (settings.overlap - 1) * HOP
    mono = np.concatenate(out)[latency:] if out else np.zeros(0)
    return geometry, estimates, spans, mono


def _doa(args: argparse.Namespace) -> int:
    geometry, estimates, spans, _ = _run(args, ArraySettings())
    segments = [
        {
            "start_s": round(start, 3),
            "end_s": round(end, 3),
            "direction_deg": round(estimate.direction_deg, 1),
            "confidence": round(estimate.confidence, 3),
        }
        for estimate, (start, end) in zip(estimates, spans, strict=True)
    ]
    if args.json:
        print_json({"geometry": geometry.name, "segments": segments})
        return EXIT_OK
    if not segments:
        sys.stdout.write("no speech found\n")
    for segment in segments:
        sys.stdout.write(
            f"{segment['start_s']:7.2f}-{segment['end_s']:7.2f} s  "
            f"{segment['direction_deg']:5.1f}°  (confidence {segment['confidence']:.2f})\n"
        )
    return EXIT_OK


def _beam(args: argparse.Namespace) -> int:
    settings = replace(ArraySettings(), beam=args.beam)
    if args.toward is not None:
        # a fixed look direction: steer there and never follow the talker
        settings = replace(settings, initial_azimuth_deg=args.toward, follow_talker=False)
    geometry, estimates, _, mono = _run(args, settings)
    if args.toward is not None:
        estimates = []
    write_wav(args.output, to_int16((mono / 32768.0).astype(np.float32)))
    result = {
        "geometry": geometry.name,
        "output": str(args.output),
        "audio_s": round(len(mono) / SAMPLE_RATE, 3),
        "beam": args.beam,
        "toward_deg": args.toward,
        "segments_steered": [round(e.direction_deg, 1) for e in estimates],
    }
    if args.json:
        print_json(result)
    else:
        where = f"toward {args.toward:.0f}°" if args.toward is not None else "toward each talker"
        sys.stdout.write(f"wrote {args.output} ({result['audio_s']:.2f} s, {args.beam} {where})\n")
    return EXIT_OK
