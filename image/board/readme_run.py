"""The README's device line, checked by hand: ``edgevoice run`` as written, on a real ALSA PCM.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install --find-links build/wheel 'edgevoice[all]'
    python3 image/board/readme_run.py /tmp/v /tmp/readme-run

A build machine has no sound card, so this gives the daemon one made by alsa-lib's own
plugins: ``$HOME/.asoundrc`` points ALSA's ``default`` at a capture FIFO written at 1x (the
pacing a card gives) and a playback file. Then it runs ``edgevoice run --events`` exactly as the
unit does (no config, no overrides), waits for ``session.ready``, lets it run 10 s, sends
SIGTERM and expects exit 0. Exit 1 otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

PERIOD_BYTES = 320  # 10 ms of 16 kHz mono S16


def asoundrc(fifo: Path, out: Path) -> str:
    return f"""
pcm.mic_raw {{ type file slave.pcm "null" file "/dev/null" infile "{fifo}" format "raw" }}
pcm.mic {{ type plug slave {{ pcm "mic_raw" format S16_LE rate 16000 channels 1 }} }}
pcm.spk_raw {{ type file slave.pcm "null" file "{out}" format "raw" truncate true perm 0644 }}
pcm.spk {{ type plug slave {{ pcm "spk_raw" format S16_LE rate 16000 channels 1 }} }}
pcm.!default {{ type asym playback.pcm "spk" capture.pcm "mic" }}
"""


def pace_silence(fifo: Path, stop: threading.Event) -> None:
    with contextlib.suppress(BrokenPipeError), fifo.open("wb", buffering=0) as out:
        start, periods = time.monotonic(), 0
        while not stop.is_set():
            out.write(b"\0" * PERIOD_BYTES)
            periods += 1
            time.sleep(max(0.0, start + periods * 0.01 - time.monotonic()))


def main(venv: Path, work: Path) -> int:
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    fifo = work / "mic.fifo"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    (home / ".asoundrc").write_text(asoundrc(fifo, work / "spk.raw"))
    stop = threading.Event()
    threading.Thread(target=pace_silence, args=(fifo, stop), daemon=True).start()
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    started = time.monotonic()
    proc = subprocess.Popen(["edgevoice", "run", "--events"], cwd=work, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    ready: float | None = None
    for line in proc.stdout:
        with contextlib.suppress(ValueError):
            if json.loads(line).get("type") == "session.ready":
                ready = time.monotonic() - started
                break
    if ready is not None:
        print(f"session.ready after {ready:.1f} s")
        time.sleep(10)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    stop.set()
    print(f"exit {proc.returncode} after SIGTERM; last log lines:")
    print("\n".join(err.strip().splitlines()[-3:]))
    return 0 if ready is not None and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
