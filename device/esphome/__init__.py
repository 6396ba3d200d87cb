"""The ESPHome native API surface: Home Assistant adopts the device as an Assist satellite.

``[esphome] enabled = true`` serves the device side of the API (plaintext or Noise):
:mod:`.frames` (framing), :mod:`.messages` (aioesphomeapi's protobuf definitions),
:mod:`.session` (one client), :mod:`.server` (the surface), :mod:`.entities`,
:mod:`.voice` (HA's pipeline as the conversation's answer), :mod:`.timers`,
:mod:`.media` (URLs HA asks the device to play), :mod:`.discovery` (zeroconf),
:mod:`.host` (the daemon's side). docs/homeassistant.md tells a user how to add it.
"""
