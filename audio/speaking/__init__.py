"""Speaking: text-to-speech engines, playback with its play cursor, what was heard of a
reply, and earcons."""
