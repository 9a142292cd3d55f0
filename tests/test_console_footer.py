"""The key footer fits the terminal: no key is cut off, help and quit keep their names."""

import asyncio

from console_fixtures import Clock, SilentBackend, compile_data, quick_flow_data

from console.app import LullApp
from console.screens.rehearse import RehearseScreen
from console.widgets.footer import SHORT_NAMES, FooterItem, fit_names, item_width

REHEARSE = [
    FooterItem(b.id, b.key.replace("ctrl+", "^"), b.description) for b in RehearseScreen.BINDINGS
] + [FooterItem("quit", "^q", "Quit"), FooterItem("sessions", "f12", "Sessions"), FooterItem("restart_call", "^r", "Restart call")]


def used(items, names) -> int:
    return sum(item_width(item.key, name) for item, name in zip(items, names))


def test_every_name_is_whole_when_the_row_fits():
    assert fit_names(REHEARSE, 400) == [item.name for item in REHEARSE]


def test_names_shrink_from_the_last_key_back_and_the_row_always_fits():
    named_before = 0
    for width in range(200, 50, -1):
        names = fit_names(REHEARSE, width)
        assert used(REHEARSE, names) <= width, width
        for item, name in zip(REHEARSE, names):
            assert name in (item.name, SHORT_NAMES.get(item.id, item.name), ""), (width, item, name)
            if item.id in ("help", "quit"):
                assert name, width  # always named
        named = sum(len(name) for name in names)
        assert named_before == 0 or named <= named_before, width  # narrower never shows more
        named_before = named
    narrow = fit_names(REHEARSE, 69)  # an 80-column terminal, less the palette key
    assert narrow[:3] == ["Help", "Prompts", "Incidents"] and "Quit" in narrow


def test_at_80_columns_the_footer_shows_quit_and_every_key():
    async def body():
        app = LullApp(compile_data(quick_flow_data()), backend=SilentBackend(), clock=Clock())
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            keys = [(w.key_display, w.description) for w in app.screen.query("FooterKey")]
            shown = dict(keys)
            assert shown["^q"] == "Quit" and shown["f1"] == "Help"
            assert {f"f{n}" for n in range(1, 11)} <= set(shown)
            await pilot.resize_terminal(160, 48)
            await pilot.pause(0.3)
            wide = dict((w.key_display, w.description) for w in app.screen.query("FooterKey"))
            assert wide["f4"] == "Fail input" and wide["f12"] == "Sessions"

    asyncio.run(body())
