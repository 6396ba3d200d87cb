"""Everything that touches samples: duplex I/O backends, the speaker and its play
cursor, resampling, WAV I/O, echo cancellation, VAD, endpointing, wake word, ASR
and TTS. Nothing here imports from ``edgevoice.device``: stages take plain
parameters, never the whole config."""
