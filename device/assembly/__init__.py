"""Config → parts: the only place that turns config sections into the stages' own settings
and builds the audio backend, echo canceller, barge-in detector, listener and speaking pipeline."""
