"""Hearing: VAD, endpointing, listen modes, ASR; and the model registry."""

from __future__ import annotations

from dataclasses import dataclass

from edgevoice.device.config.fields import setting


@dataclass(frozen=True, slots=True)
class VadConfig:
    """Voice activity detection: a speech probability per window, gated with hysteresis
    (docs/hearing.md)."""

    engine: str = setting(
        "silero", "silero (neural, ~7 ms CPU per second) or energy (level above the noise "
        "floor; cheap, fooled by any loud sound).", choices=("silero", "energy"), restart=True,
    )
    model: str = setting(
        "silero-vad", "Silero model: registry name or path of the .onnx.", restart=True
    )
    threshold: float = setting(
        0.5, "Probability at which speech starts.", minimum=0.01, maximum=1.0
    )
    release_threshold: float = setting(
        0.35, "Speech lasts until the probability falls below this (at most threshold).",
        minimum=0.0, maximum=1.0,
    )
    energy_margin_db: float = setting(
        12.0, "Energy engine: how far above the noise floor counts as speech.",
        minimum=0.0, maximum=60.0,
    )
    idle_gate_db: float = setting(
        6.0, "Silero engine, while nobody talks and nothing plays: score only audio this far "
        "above the room's noise floor (and the second after it), so a quiet room costs "
        "almost nothing. 0: score everything.", minimum=0.0, maximum=40.0,
    )
    state_reset_s: float = setting(
        1.0, "Silero engine: zero the model's recurrent state after this long with nothing "
        "scored as speech. Over a long stream the state drifts and a person talking over the "
        "device is scored late (docs/hearing.md, \"State drift\"). 0: never.",
        minimum=0.0, maximum=60.0, restart=True,
    )


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """Where a turn starts and ends (docs/hearing.md)."""

    min_speech_ms: int = setting(
        100, "Speech must last this long to start a turn.", minimum=0, maximum=2000
    )
    end_silence_ms: int = setting(
        600, "Silence that ends a turn.", minimum=100, maximum=10000
    )
    max_turn_s: float = setting(15.0, "Longest turn; it is cut there.", minimum=1.0, maximum=300.0)
    pre_roll_ms: int = setting(
        300, "Audio kept from before the detected start of speech, so the first syllable "
        "reaches the recognizer.", minimum=0, maximum=2000,
    )
    turn_model: str = setting(
        "off", "End of turn by a turn-completion model: off (the turn ends after end_silence_ms "
        "of silence) or smart-turn (pipecat's smart-turn v3, ~90 ms CPU per pause on a 2-core "
        "x86-64, 3-5x that on a Pi 4: asked in each pause whether the person is done, a finished "
        "turn ends after turn_check_ms of silence, one mid-thought waits up to end_silence_ms; "
        "docs/hearing.md).", choices=("off", "smart-turn"), restart=True,
    )
    turn_model_name: str = setting(
        "smart-turn-v3", "The turn model: registry name or path of the .onnx.", restart=True,
    )
    turn_check_ms: int = setting(
        300, "With a turn model: silence after which its answer may end the turn (asked sooner, "
        "see turn_ask_ahead_ms). Keep it below end_silence_ms.",
        minimum=50, maximum=5000, restart=True,
    )
    turn_threshold: float = setting(
        0.5, "With a turn model: P(complete) at or over which the pause ends the turn.",
        minimum=0.0, maximum=1.0, restart=True,
    )
    turn_ask_ahead_ms: int = setting(
        100, "With a turn model: ask it once the pause has lasted this long, on the pause's audio "
        "with silence added up to turn_check_ms, so its answer is in when the check comes and the "
        "turn ends at the check, not a decision's CPU time after it (50-120 ms on a 2-core "
        "x86-64, 3-5x on a Pi 4); the decision also runs before piper renders the prepared "
        "reply. A pause the person ends in between costs one decision. 0, or at least "
        "turn_check_ms: ask at turn_check_ms (docs/hearing.md, 'Asking ahead').",
        minimum=0, maximum=5000, restart=True,
    )
    hold_silence_ms: int = setting(
        1600, "Text hold: the recognizer's early final (asr.early_final_ms, or the turn model's "
        "ask) is read, and a pause whose words cannot end an English sentence (a trailing "
        "\"for\", \"the\", \"and\", \"um\", a comma) is not ended by end_silence_ms nor by the "
        "turn model: it waits this long. Until the words are read no pause ends sooner than "
        "this. Needs streaming, free-form recognition. 0: off (docs/hearing.md).",
        minimum=0, maximum=10000,
    )


@dataclass(frozen=True, slots=True)
class ListenConfig:
    """When the device listens: always, after a wake word, or while a button says so."""

    mode: str = setting(
        "always", "always (every turn is for the device), wakeword, or button (push to talk).",
        choices=("always", "wakeword", "button"), restart=True,
    )
    wakeword: str = setting(
        "okay_nabu", "Wake word model: okay_nabu, hey_jarvis, hey_mycroft, alexa, or the path "
        "of a microWakeWord .tflite (its .json beside it).", restart=True,
    )
    wakeword_threshold: float = setting(
        0.0, "Detection threshold. 0: the model manifest's probability_cutoff.",
        minimum=0.0, maximum=0.99, restart=True,
    )
    wakeword_window: int = setting(
        0, "Probabilities averaged for a detection. 0: the manifest's sliding_window_size.",
        minimum=0, maximum=100, restart=True,
    )
    wakeword_refractory_s: float = setting(
        0.0, "After a detection, ignore the wake word this long. 0: the manifest's "
        "(2 s when it names none).", minimum=0.0, maximum=60.0, restart=True,
    )
    wake_timeout_s: float = setting(
        5.0, "After the wake word (or a button press in press mode), give up when nobody "
        "starts speaking within this time.", minimum=0.5, maximum=60.0,
    )
    follow_up_s: float = setting(
        5.0, "wakeword mode: after each reply, accept a turn without the wake word for this "
        "long. 0: always require the wake word. Not while Home Assistant's pipeline answers "
        "(HA decides: continue_conversation).", minimum=0.0, maximum=120.0,
    )
    button_mode: str = setting(
        "hold", "button mode: hold (talk while held) or press (press to start; the end of "
        "speech or another press ends the turn).", choices=("hold", "press"),
    )


@dataclass(frozen=True, slots=True)
class AsrConfig:
    """Speech recognition (docs/hearing.md)."""

    engine: str = setting(
        "auto", "auto (vosk when a vosk model for device.language is on the device; else, for "
        "English, Moonshine tiny-en when installed; else pocketsphinx's bundled English, with a "
        "warning), vosk, moonshine or pocketsphinx.",
        choices=("auto", "vosk", "moonshine", "pocketsphinx"), restart=True,
    )
    model: str = setting(
        "", "Model: registry name or path of the model folder. Empty: the first installed "
        "model of the engine for device.language.", restart=True,
    )
    grammar: tuple[str, ...] = setting(
        (), "Phrase list: recognise only these phrases (command devices). Empty: free speech.", restart=True
    )
    process: str = setting(
        "auto", "Where the recognizer decodes: worker (a child process, so decoding never holds the "
        "daemon's GIL), inline (in the front end's thread) or auto (worker for pocketsphinx, whose "
        "bindings hold the GIL while decoding; inline for vosk, which releases it).",
        choices=("auto", "worker", "inline"), restart=True,
    )
    low_confidence: float = setting(
        0.6, "A turn whose mean word confidence is below this is flagged low_confidence.",
        minimum=0.0, maximum=1.0,
    )
    streaming: bool = setting(
        True, "Decode while the person speaks (partial transcripts; the final comes right "
        "after the end of speech) rather than once the turn is over.",
    )
    early_final_ms: int = setting(
        100, "With streaming, free-form: run the recognizer's final pass once the speech has "
        "paused this long, inside the silence that ends the turn, so the transcript is ready "
        "when the turn ends (speech that goes on is recognised as the turn's next words), and "
        "with llm.speculate the agent request goes out then. Each such pause costs a final pass, "
        "and a request closed unread if the person goes on (docs/hearing.md, 'Early final'). "
        "Keep it below endpoint.end_silence_ms. 0: the final pass runs at the turn's end.",
        minimum=0, maximum=10000,
    )
    early_decode_ms: int = setting(
        64, "Start the early final's decode once the speech has paused this long, before "
        "early_final_ms: its words (and with llm.speculate the agent request) still wait for "
        "early_final_ms, but the decode's time is off the path to the reply (smart-turn's "
        "first sound ~485 -> ~450 ms here). A pause the person ends in between costs only the "
        "decode (~17 more per 100 turns; docs/hearing.md, 'Early final'). 0, or at least "
        "early_final_ms: the decode starts at early_final_ms.",
        minimum=0, maximum=10000,
    )
    partial_interval_ms: int = setting(
        500, "Moonshine (not a streaming engine): re-decode the turn so far for a partial "
        "transcript at most this often, in ms of new audio (one decode at a time, on its own "
        "thread). Raise it to spend less CPU on partials; 0: no partials.",
        minimum=0, maximum=10000, restart=True,
    )


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    """The model registry (edgevoice models list|fetch|verify|remove)."""

    dir: str = setting(
        "",
        "Folder fetched models are installed in. Empty: $EDGEVOICE_MODELS_DIR, else "
        "/var/lib/edgevoice/models when this user may write it, else "
        "~/.local/share/edgevoice/models.",
        restart=True,
    )
