"""The consoles the CLI prints with follow the terminal they print to: one made for a
terminal 200 columns wide, or for a stream that is a terminal, is never used for another
(issue 41: a cached width leaked from one test into the next, and the caller's own
terminal into the suite)."""

from __future__ import annotations

import io
import sys

import pytest

from docshelf.cli import command, core


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_console_is_made_for_the_width_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_CONSOLES", {})  # none made yet, as in a new process
    monkeypatch.setenv("COLUMNS", "200")  # a test's terminal, or the caller's
    assert core.console().width == 200
    monkeypatch.setenv("COLUMNS", "60")
    assert core.console().width == 60
    assert command.console.width == 60  # the typer commands' console is the same


def test_a_console_is_made_for_the_stream_it_prints_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    plain = core.console()
    assert plain.color_system is None  # pytest's captured stdout is no terminal
    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    styled = core.console()
    assert styled is not plain and styled.color_system is not None
    command.console.print("bold", style="bold")
    assert "\x1b[1m" in screen.getvalue()
    monkeypatch.undo()
    assert core.console().color_system is None  # back on a stream that is no terminal


def test_a_console_the_same_terminal_asks_for_is_made_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert core.console() is core.console()
    assert core.console(stderr=True) is core.console(stderr=True) is not core.console()
