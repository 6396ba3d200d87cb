"""The appliance: config, CLI, the conversation runtime, events, agent clients, MQTT
telemetry and fleet commands; ``assembly`` (config → parts), ``speaking`` (reply text
shaping and the reply pipeline), ``hardware`` (GPIO, LEDs, profiles and presets) and
``system`` (systemd notify, board statistics, memory, logging)."""
