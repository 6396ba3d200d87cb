"""First boot: device identity, config from the boot partition, Wi-Fi, MQTT
credentials, secrets moved off the boot partition."""
