"""Fixtures of the MQTT tests: a real mosquitto per test (see support.mosquitto)."""

from support.mosquitto import broker, mqtt_pki

__all__ = ["broker", "mqtt_pki"]
