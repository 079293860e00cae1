"""Specialist roles: a persona prompt per role.

Built-in roles ship here. ``[roles.NAME] prompt = "..."`` in the config, and a file
``specialists/<role>.md`` next to the config file or in the working directory, add a role
or replace a built-in one (files win over the config). The file's text is the prompt.

Role names are lowercase letters, digits, ``-`` and ``_`` (they are also file names); a
name outside that rule is reported as invalid, never as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from thoughtline._user_files import read_text_file
from thoughtline.config import ROLE_NAME, ROLE_NAME_RULE
from thoughtline.errors import ThoughtlineError, did_you_mean

NO_PERSONA = "assistant"
"""The role of a task no persona was asked for: its prompt is empty, so no system prompt
is sent (``--role``, ``--system`` or ``[defaults] role`` give one)."""

BUILTIN_ROLES: dict[str, str] = {
    NO_PERSONA: "",
    "engineer": (
        "You are a senior software engineer. Give a concrete, correct, implementable answer. "
        "Prefer simple designs, name the trade-offs, and show code only where it helps."
    ),
    "reviewer": (
        "You are a careful code and design reviewer. Find what is wrong, risky or unclear, "
        "in order of importance, and say how to fix each point. Do not restate what is fine."
    ),
    "architect": (
        "You are a software architect. Describe the structure: components, what each owns, "
        "how they communicate, and the decisions that are hard to reverse."
    ),
    "security": (
        "You are an application security specialist. Identify threats, vulnerable inputs and "
        "secrets handling problems, rate their severity, and give concrete mitigations."
    ),
}


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    prompt: str
    source: str  # "builtin" or the file it came from


class UnknownRoleError(ThoughtlineError):
    def __init__(self, name: str, known: list[str], searched: list[Path]) -> None:
        places = ", ".join(str(path) for path in searched) or "no specialists/ folder"
        super().__init__(
            "ROLE_UNKNOWN",
            f"Unknown role {name!r}.{did_you_mean(name, known)} Known roles: "
            f"{', '.join(sorted(known))}. "
            f"Add specialists/{name}.md (looked in: {places}).",
        )


class InvalidRoleNameError(ThoughtlineError):
    def __init__(self, name: str, files: list[Path]) -> None:
        ignored = (
            f" ({', '.join(str(path) for path in files)} is ignored for that reason)"
            if files
            else ""
        )
        super().__init__(
            "ROLE_INVALID",
            f"Invalid role name {name!r}: {ROLE_NAME_RULE}{ignored}.",
        )


class RoleCatalog:
    """Built-in roles overlaid with ``specialists/*.md`` from the given folders (earlier
    folders win)."""

    def __init__(self, folders: list[Path], configured: Mapping[str, str] | None = None) -> None:
        self.folders = [folder for folder in folders if folder.is_dir()]
        self._roles = {
            name: Role(name, prompt, "builtin") for name, prompt in BUILTIN_ROLES.items()
        }
        # specialists/*.md whose name is not a role name (README.md, "My Role.md"): not
        # roles, but named when someone asks for that name.
        self._invalid_files: dict[str, list[Path]] = {}
        for name, prompt in (configured or {}).items():
            self._roles[name] = Role(name, prompt, "config")
        for folder in reversed(self.folders):
            for path in sorted(folder.glob("*.md")):
                name = path.stem
                if not ROLE_NAME.match(name):
                    self._invalid_files.setdefault(name, []).append(path)
                    continue
                prompt = read_text_file(path, "role prompt file").strip()
                if prompt:
                    self._roles[name] = Role(name, prompt, str(path))

    @property
    def names(self) -> list[str]:
        return sorted(self._roles)

    def get(self, name: str) -> Role:
        role = self._roles.get(name)
        if role is not None:
            return role
        if not ROLE_NAME.match(name):
            raise InvalidRoleNameError(name, self._invalid_files.get(name, []))
        raise UnknownRoleError(name, self.names, self.folders)
