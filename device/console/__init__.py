"""The local console: the kiosk's captions, the operator desk, the event bus on a
WebSocket and Prometheus metrics, served by aiohttp beside the daemon.

The console is a surface over the device's control interface (commands) and the event
bus; it reaches into no other surface. See ``docs/console.md``.
"""
