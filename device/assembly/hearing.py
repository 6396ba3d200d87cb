"""Config → hearing engines: the only place that reads ``[vad]``, ``[endpoint]``,
``[listen]`` and ``[asr]``. The stages in ``edgevoice.audio`` take plain parameters.

The runtime calls :func:`build_listener` once at start and feeds the returned
:class:`~edgevoice.audio.hearing.listener.Listener` 16 kHz frames from the audio thread.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

from edgevoice.audio.hearing.asr import AsrEngine
from edgevoice.audio.hearing.endpoint import EndpointSettings
from edgevoice.audio.hearing.listener import Listener
from edgevoice.audio.hearing.modes import ButtonMode, ListenMode
from edgevoice.audio.hearing.turn_model import TurnJudge
from edgevoice.audio.hearing.vad import QuietGate, VadEngine, VoiceActivity
from edgevoice.audio.hearing.wakeword import WakeWordDetector
from edgevoice.device.config import Config, ConfigError
from edgevoice.device.config.loader import ConfigProblem
from edgevoice.device.config.schema import (
    AsrConfig,
    EndpointConfig,
    ListenConfig,
    VadConfig,
)
from edgevoice.models import (
    ModelKind,
    ModelLocation,
    ModelNotFoundError,
    find_models,
    language_matches,
    resolve_model,
)

_LOGGER = logging.getLogger(__name__)

FALLBACK_LANGUAGE = "en-US"  # pocketsphinx's bundled model
SUGGESTED_VOSK_MODEL = {"en": "vosk-model-small-en-us-0.15"}
# engine = auto: vosk (streams; what a device fetches), then Moonshine (accurate English,
# bundled by a registry package), then pocketsphinx (the last resort, with a warning).
AUTO_ORDER = ("vosk", "moonshine", "pocketsphinx")
SUGGESTED_MODEL = {
    ("vosk", "en"): "edgevoice models fetch vosk-model-small-en-us-0.15",
    ("moonshine", "en"): "pip install 'edgevoice[moonshine]' (or edgevoice models fetch moonshine-tiny-en)",
}
_fallback_warned: set[str] = set()  # languages whose fallback was logged (once per process)


def _models_dir(config: Config) -> str | None:
    return config.models.dir or None


def build_vad(vad: VadConfig, models_dir: str | Path | None = None) -> VoiceActivity:
    if vad.release_threshold > vad.threshold:
        raise ConfigError([ConfigProblem(
            "config", "vad.release_threshold",
            f"must not exceed vad.threshold ({vad.threshold}); got {vad.release_threshold}",
        )])
    engine: VadEngine
    if vad.engine == "energy":
        from edgevoice.audio.hearing.vad_energy import EnergyVad

        engine = EnergyVad(margin_db=vad.energy_margin_db)
    else:
        from edgevoice.audio.hearing.vad_silero import SileroVad

        engine = SileroVad(resolve_model(vad.model, ModelKind.VAD, models_dir).path,
                           state_reset_s=vad.state_reset_s)
    # The energy engine is as cheap as the gate itself: nothing to spare.
    quiet = QuietGate(vad.idle_gate_db) if vad.idle_gate_db > 0 and vad.engine != "energy" else None
    return VoiceActivity(engine, vad.threshold, vad.release_threshold, quiet)


def endpoint_settings(endpoint: EndpointConfig) -> EndpointSettings:
    return EndpointSettings(
        min_speech_ms=endpoint.min_speech_ms,
        end_silence_ms=endpoint.end_silence_ms,
        max_turn_s=endpoint.max_turn_s,
        pre_roll_ms=endpoint.pre_roll_ms,
        turn_check_ms=endpoint.turn_check_ms if endpoint.turn_model != "off" else 0,
        turn_threshold=endpoint.turn_threshold,
        hold_silence_ms=endpoint.hold_silence_ms,
    )


def build_turn_judge(endpoint: EndpointConfig, models_dir: str | Path | None = None) -> TurnJudge | None:
    """The turn model on its own thread, or ``None`` when ``[endpoint] turn_model`` is off."""
    if endpoint.turn_model == "off":
        return None
    from edgevoice.audio.hearing.turn_model import TurnModel, TurnWorker

    loc = resolve_model(endpoint.turn_model_name, ModelKind.TURN, models_dir)
    model = TurnModel(loc.path)
    _LOGGER.info("end of turn: %s asked after %d ms of silence", loc.name, endpoint.turn_check_ms)
    return TurnWorker(model.completion)


def build_wakeword(listen: ListenConfig, models_dir: str | Path | None = None) -> WakeWordDetector:
    loc = resolve_model(listen.wakeword, ModelKind.WAKEWORD, models_dir)
    return WakeWordDetector(
        loc.path,
        threshold=listen.wakeword_threshold or None,
        window=listen.wakeword_window or None,
        refractory_s=listen.wakeword_refractory_s or None,
    )


def choose_asr_model(asr: AsrConfig, language: str, models_dir: str | Path | None = None) -> ModelLocation:
    """The ASR model the config asks for. ``engine = auto`` picks the best one installed
    for the language: vosk when a vosk model for it is on the device (it streams, and it
    is what a device fetches); else, for English, Moonshine tiny-en (bundled by
    ``moonshine-voice``); else pocketsphinx's bundled en-US model, logged at WARNING once
    per process."""
    if asr.model:
        try:
            loc = resolve_model(asr.model, ModelKind.ASR, models_dir)
        except ModelNotFoundError as err:
            if asr.engine != "auto":
                raise
            return _fallback(language, models_dir, str(err))
        if asr.engine not in ("auto", loc.engine):
            raise ConfigError([ConfigProblem(
                "config", "asr.model",
                f"{asr.model} is a {loc.engine} model but asr.engine is {asr.engine}",
            )])
        return loc
    engines = ("vosk",) if asr.engine == "auto" else (asr.engine,)
    for engine in engines:
        found = find_models(ModelKind.ASR, language=language, engine=engine, models_dir=models_dir)
        if found:
            return found[0]
    if asr.engine == "auto":  # Moonshine for English, else pocketsphinx with the warning
        return _fallback(language, models_dir, f"no vosk model for language {language!r} is installed")
    hint = SUGGESTED_MODEL.get((asr.engine, language.split("-", maxsplit=1)[0].lower()))
    raise ModelNotFoundError(
        f"no {asr.engine} model for language {language!r} is on this device. "
        + (f"Run: {hint}" if hint else "Set asr.model to a model folder, or see `edgevoice models list`.")
    )


def _fallback(language: str, models_dir: str | Path | None, why: str) -> ModelLocation:
    """``auto`` without a vosk model: Moonshine when installed for the language (English),
    else pocketsphinx's US English model, with the warning."""
    accurate = find_models(ModelKind.ASR, language=language, engine="moonshine", models_dir=models_dir)
    if accurate:
        _LOGGER.info("%s: hearing %s with %s", why, language, accurate[0].name)
        return accurate[0]
    if not language_matches(FALLBACK_LANGUAGE, language):
        raise ModelNotFoundError(
            f"{why}, and the English engines (Moonshine, pocketsphinx) only speak English. Fetch a "
            f"vosk model for {language!r} (`edgevoice models list`) or set asr.model to a model folder."
        )
    found = find_models(ModelKind.ASR, language=language, engine="pocketsphinx", models_dir=models_dir)
    if not found:
        raise ModelNotFoundError(
            f"{why}, and no English model is installed either. Run: pip install "
            "'edgevoice[moonshine]' (Moonshine tiny-en, bundled), or edgevoice models fetch "
            "moonshine-tiny-en"
        )
    primary = language.split("-", maxsplit=1)[0].lower()
    if primary not in _fallback_warned:
        _fallback_warned.add(primary)
        _LOGGER.warning(
            "%s and Moonshine is not installed: falling back to pocketsphinx's bundled US English "
            "model (%s), which mis-hears free speech. For accurate English run: pip install "
            "'edgevoice[moonshine]' (or edgevoice models fetch %s)",
            why, found[0].name, SUGGESTED_VOSK_MODEL["en"],
        )
    return found[0]


def build_asr(asr: AsrConfig, language: str, models_dir: str | Path | None = None) -> AsrEngine:
    loc = choose_asr_model(asr, language, models_dir)
    engine: type[AsrEngine]
    if loc.engine == "pocketsphinx":
        from edgevoice.audio.hearing.asr_pocketsphinx import PocketsphinxEngine

        engine = PocketsphinxEngine
    elif loc.engine == "moonshine":
        from edgevoice.audio.hearing.asr_moonshine import MoonshineEngine

        # decodes on a thread of its own that releases the GIL: no worker process needed
        return MoonshineEngine(loc.path, model_name=loc.name, language=loc.language or language,
                               grammar=asr.grammar, low_confidence=asr.low_confidence,
                               partial_interval_s=asr.partial_interval_ms / 1000)
    else:
        from edgevoice.audio.hearing.asr_vosk import VoskEngine

        engine = VoskEngine
    factory = functools.partial(engine, loc.path, model_name=loc.name, language=loc.language or language,
                                grammar=asr.grammar, low_confidence=asr.low_confidence)
    if asr.process == "worker" or (asr.process == "auto" and loc.engine == "pocketsphinx"):
        from edgevoice.audio.hearing.asr_worker import WorkerAsrEngine

        return WorkerAsrEngine(factory)
    return factory()


def build_listener(config: Config, *, asr: AsrEngine | None = None, origin_s: float = 0.0) -> Listener:
    """The whole hearing pipeline as the config describes it. Pass ``asr`` to share an
    engine that is already loaded (the vosk model takes seconds to load)."""
    models_dir = _models_dir(config)
    listen = config.listen
    mode = ListenMode(listen.mode)
    return Listener(
        build_vad(config.vad, models_dir),
        asr if asr is not None else build_asr(config.asr, config.device.language, models_dir),
        endpoint=endpoint_settings(config.endpoint),
        mode=mode,
        wakeword=build_wakeword(listen, models_dir) if mode == ListenMode.WAKEWORD else None,
        button_mode=ButtonMode(listen.button_mode),
        follow_up_s=listen.follow_up_s,
        streaming=config.asr.streaming,
        early_final_ms=config.asr.early_final_ms,
        early_decode_ms=config.asr.early_decode_ms,
        wake_timeout_s=listen.wake_timeout_s,
        origin_s=origin_s,
        turn_judge=build_turn_judge(config.endpoint, models_dir),
        turn_ask_ahead_ms=config.endpoint.turn_ask_ahead_ms,
        owns_asr=asr is None,
    )
