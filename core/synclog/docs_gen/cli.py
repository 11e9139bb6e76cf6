"""The command-line reference, from the argument parser."""

from __future__ import annotations

import argparse

from synclog.cli.main import build_parser
from synclog.docs_gen.markdown import code, header, table


def page() -> str:
    """The global options, then a section per command with its synopsis and options."""
    parser = build_parser()
    parts = [
        header("Command line", "the argument parser (`synclog.cli.main.build_parser`)"),
        "Every command has `--help`. Bad usage, configuration or input prints one line and exits 2; "
        "a warehouse failure, or anything unexpected, prints one line and exits 1.\n\n",
        f"```text\n{_synopsis('synclog', parser)} COMMAND …\n```\n\n",
        _options(parser),
    ]
    for name, command in _commands(parser).items():
        parts.append(f"\n## synclog {name}\n\n{_help_of(parser, name)}\n\n")
        parts.append(f"```text\n{_synopsis(f'synclog {name}', command)}\n```\n\n")
        parts.append(_options(command))
    return "".join(parts)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subs._choices_actions}
    text = (helps.get(name) or "").rstrip(".")
    return text[:1].upper() + text[1:] + "."


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return "|".join(map(str, action.choices))
    metavar = action.metavar
    if isinstance(metavar, tuple):
        return " ".join(metavar)
    return metavar or action.dest.upper()


def _synopsis(prog: str, parser: argparse.ArgumentParser) -> str:
    words = [prog]
    for action in _arguments(parser):
        value = _value(action)
        if not action.option_strings:
            words.append(value)
            continue
        word = " ".join(filter(None, (action.option_strings[-1], value)))
        words.append(word if action.required else f"[{word}]")
    return " ".join(words)


def _options(parser: argparse.ArgumentParser) -> str:
    rows = [
        [
            code(", ".join(action.option_strings) or action.dest),
            code(_value(action)),
            "yes" if action.required or not action.option_strings else "",
            (action.help or "") + (" (repeatable)" if isinstance(action, argparse._AppendAction) else ""),
        ]
        for action in _arguments(parser)
    ]
    return table(["option", "value", "required", "meaning"], rows) if rows else ""
