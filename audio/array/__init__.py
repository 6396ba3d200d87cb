"""Microphone arrays: geometry, direction of arrival and beamforming.

These are audio stages between capture and the listener. They take the array's
geometry as a plain parameter (:class:`~edgevoice.audio.array.geometry.ArrayGeometry`)
and work on multi-channel periods in the short-time Fourier domain
(:mod:`~edgevoice.audio.array.stft`): :mod:`~edgevoice.audio.array.doa` finds where the
talker is (SRP-PHAT), :mod:`~edgevoice.audio.array.beamformer` listens that way (MVDR
with a noise covariance learnt while the target is quiet, delay-and-sum as the fixed
fallback).
"""
