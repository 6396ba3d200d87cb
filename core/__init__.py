"""edgevoice: an on-device voice front end for Raspberry-Pi-class boards.

The device owns the call (listening, turn-taking, speaking, being interrupted);
a configurable agent owns what to say. Subpackages:

- ``edgevoice.audio``: everything that touches samples.
- ``edgevoice.models``: the model registry.
- ``edgevoice.device``: the appliance (config, CLI, runtime, agents, MQTT, GPIO).
- ``edgevoice.provisioning``: first boot.
"""

from __future__ import annotations

__version__ = "0.1.0"
