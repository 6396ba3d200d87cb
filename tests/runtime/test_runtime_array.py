"""The whole device on a simulated 4-mic array (ReSpeaker 4-mic geometry): the person is
heard through the beam with the echo cancelled per mic, ``input.speech.started`` says
where they stand, telemetry carries the smoothed direction, and they can still talk over
a reply. Real models, the example agent server on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gpiozero import Device
from gpiozero.pins.mock import MockFactory
from support.agent_server import example_server
from support.apa102 import Apa102Strip
from support.device_harness import running_device

from edgevoice.audio.array.doa import angle_difference_deg
from edgevoice.audio.array.geometry import parse_geometry
from edgevoice.device.events import EventType
from edgevoice.device.hardware.ledring import BLUE, apa102_frame, direction_colors, pointing_led

ARRAY = ['array.geometry="respeaker-4mic"', "audio.capture_channels=4", "audio.mic_channels=[0,1,2,3]"]


async def test_the_device_hears_through_the_beam_and_knows_where_the_talker_is(tmp_path: Path) -> None:
    async with (
        example_server(shape="sse", word_delay_s=0.25) as server,
        running_device(tmp_path, [f"agent.url={server.url}/agent", *ARRAY],
                       geometry=parse_geometry("respeaker-4mic")) as device,
    ):
        front = device.daemon.conversation.front if device.daemon.conversation else None
        assert front is not None and front.array is not None and len(front.array.cancellers) == 4
        device.say("my name is alice", azimuth_deg=120.0)
        started = await device.wait_for(EventType.SPEECH_STARTED)
        assert angle_difference_deg(started.data["direction_deg"], 120.0) < 15.0, started.data
        heard = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert heard.data["text"] == "my name is alice"
        await device.wait_for(EventType.REPLY_DONE, status="completed")
        assert angle_difference_deg(front.array.steered_deg, 120.0) < 15.0
        levels = device.daemon.telemetry()
        assert angle_difference_deg(levels["talker_direction_deg"], 120.0) < 15.0, levels

        # from somewhere else, over a long reply: a barge-in through the beam
        device.say("tell me a long story", azimuth_deg=300.0)
        await device.wait_for(EventType.TRANSCRIPT_USER, text="tell me a long story")
        await device.wait_for(EventType.REPLY_STARTED)
        device.say("what is my name", after_s=1.5, azimuth_deg=300.0)
        await device.wait_for(EventType.BARGE_IN)
        done = await device.wait_for(EventType.REPLY_DONE)
        assert done.data["status"] == "interrupted"
        nxt = await device.wait_for(EventType.TRANSCRIPT_USER)
        assert nxt.data["text"] == "what is my name"
        onsets = [e.data.get("direction_deg") for e in device.of(EventType.SPEECH_STARTED)]
        assert angle_difference_deg(onsets[-1], 300.0) < 15.0, onsets


async def test_the_led_ring_looks_at_the_talker_while_listening(tmp_path: Path) -> None:
    factory = MockFactory()
    previous, Device.pin_factory = Device.pin_factory, factory  # the mock SPI's software pins
    strip = Apa102Strip(factory)
    ring = ["gpio.enabled=true", "gpio.button_pin=-1", "gpio.led_pin=-1", 'gpio.led_ring="apa102"',
            "gpio.led_ring_count=12", "gpio.led_brightness=1.0", "array.led_offset_deg=30"]
    try:
        async with (
            example_server(shape="sse", word_delay_s=0.25) as server,
            running_device(tmp_path, [f"agent.url={server.url}/agent", *ARRAY, *ring], pin_factory=factory,
                           geometry=parse_geometry("respeaker-4mic")) as device,
        ):
            device.say("my name is alice", azimuth_deg=120.0)
            started = await device.wait_for(EventType.SPEECH_STARTED)
            direction = started.data["direction_deg"]
            assert pointing_led(direction, 12, 30.0) == 3  # (120 - 30) / 30: the LED facing alice
            pointing = apa102_frame(direction_colors(direction, 12, 30.0), 31)
            for _ in range(100):
                if pointing in strip.frames:
                    break
                await asyncio.sleep(0.05)
            assert pointing in strip.frames, "the ring never pointed at the talker"
            assert pointing[4 + 3 * 4:4 + 4 * 4] == [0xFF, BLUE[2], BLUE[1], BLUE[0]]
            await device.wait_for(EventType.REPLY_DONE, status="completed")
            assert device.daemon._ring is not None and device.daemon._ring.direction_deg is None
    finally:
        strip.close()
        factory.reset()
        Device.pin_factory = previous
