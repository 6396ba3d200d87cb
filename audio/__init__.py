"""Everything that touches samples, one folder per stage: ``io`` (the duplex loop and its
backends, WAV I/O, resampling), ``aec`` (echo cancellation), ``hearing`` (VAD,
endpointing, wake word, ASR, the barge-in detector, the listener) and ``speaking`` (TTS,
playback and its play cursor, earcons); ``frames`` and ``errors`` are shared by all.
Nothing here imports from ``edgevoice.device``: stages take plain parameters, never the
whole config."""
