"""An APA102 LED strip on gpiozero's mock SPI bus: the LED side of the ring's wires."""

from __future__ import annotations

from gpiozero.pins.mock import MockFactory, MockSPIDevice


class Apa102Strip(MockSPIDevice):
    """The LED side of the bus (gpiozero's own SPI test double): every complete frame
    it is clocked, as bytes."""

    def __init__(self, factory: MockFactory) -> None:
        super().__init__(11, 10, None, 8, pin_factory=factory)
        self.frames: list[list[int]] = []

    def on_select(self) -> None:
        super().on_select()
        if self.select_pin.state and self.rx_buf:  # deselected: a frame is complete
            bits = [int(b) for b in self.rx_buf]
            self.frames.append([int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8)])
