"""Hearing: voice activity, endpointing, wake word, speech recognition engines, the
barge-in detector, and the listener that runs them on captured frames."""
