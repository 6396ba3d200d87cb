"""Audio I/O: the duplex loop, its backends (ALSA, the simulated room, WAV files), the ALSA
device listing, WAV read/write and sample-rate conversion at the edges."""
