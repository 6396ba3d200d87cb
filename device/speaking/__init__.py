"""Speaking a reply: streamed text shaped into sentences (``sentences``), markdown made
speakable (``markdown``), and the reply pipeline to TTS and the speaker (``reply``)."""
