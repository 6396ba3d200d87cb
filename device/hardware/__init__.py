"""The board's hardware: the GPIO button and status LED, GPIO outputs, the APA102 LED
ring, hardware profiles and the presets (profile configs, ALSA PCMs) the package ships."""
