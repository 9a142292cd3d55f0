"""A response-time histogram drawn in the terminal (textual-plotext), the ladder's waits on it."""

from __future__ import annotations

from textual_plotext import PlotextPlot

BINS = 40


class ResponseHistogram(PlotextPlot):
    """Seconds from the end of a question to the caller's first speech, callers counted
    per bin; a vertical line at each wait (the recorded first wait, and an edited one)."""

    def show(self, title: str, seconds: list[float], waits: list[tuple[str, float]]) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("seconds after the question ended")
        data = sorted(seconds)
        over = 0
        if data:
            # the long tail (a caller who took a minute) would squash the rest into a few
            # bars: the axis ends past the 98th percentile and every wait, the rest is
            # drawn in the last bar and counted in the title
            top = max(data[int(0.98 * (len(data) - 1))], *(1.25 * w for _, w in waits)) if waits else data[-1]
            over = sum(1 for x in data if x > top)
            plt.hist([min(x, top) for x in data], bins=BINS)
            plt.xlim(0, top * 1.02)
        plt.title(title + (f" ({over} past {top:.0f}s drawn in the last bar)" if over else ""))
        for name, at in waits:
            color = "red" if name.startswith("edited") else "orange"
            plt.vline(at, color)
            plt.text(name, x=at, y=0, color=color, alignment="left")
        self.refresh()
