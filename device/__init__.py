"""The appliance: config, CLI, the conversation runtime, events, agent clients,
MQTT telemetry and fleet commands, GPIO button and LEDs, systemd notify."""
