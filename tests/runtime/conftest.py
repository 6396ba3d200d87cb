from support.mosquitto import broker, mqtt_pki

__all__ = ["broker", "mqtt_pki"]
