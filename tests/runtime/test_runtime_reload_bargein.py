"""``[barge_in]`` keys apply on reload (SIGHUP, set_config), as their docs say: the
detector's settings change on the front-end thread that feeds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.device_harness import running_device


async def test_reloaded_barge_in_settings_reach_the_running_detector(tmp_path: Path) -> None:
    async with running_device(tmp_path) as device:
        daemon = device.daemon
        assert daemon.conversation is not None
        detector = daemon.conversation.barge_in.detector
        assert detector.settings.min_speech_ms == 150 and detector.settings.max_suppression_db == 6.0
        (tmp_path / "config.toml").write_text("[barge_in]\nmin_speech_ms = 300\nmax_suppression_db = 9.5\n")
        await daemon.control.reload()
        for _ in range(200):  # applied before the front end's next frame
            if detector.settings.min_speech_ms == 300:
                break
            await asyncio.sleep(0.05)
        assert detector.settings.min_speech_ms == 300 and detector.settings.max_suppression_db == 9.5
        assert daemon.config.barge_in.min_speech_ms == 300
