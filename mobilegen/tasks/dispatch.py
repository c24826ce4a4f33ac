"""Per task kind: ``--task`` and its flags → a TaskSpec (the shared checks in tasks.spec, then the image and
audio parser there or the text parser in tasks.text.task, which reads the tokenizer so a bad one is refused
before the export), and the spec checked against the exported model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen.tasks.spec import (
    TEXT_KINDS,
    TaskFlags,
    TaskSpec,
    media_task_from_flags,
    resolve_media,
    task_kind_from_flags,
)
from mobilegen.tasks.text.task import resolve_text, text_task_from_flags

if TYPE_CHECKING:
    from mobilegen.spec import IOSpec


def task_from_flags(f: TaskFlags) -> TaskSpec | None:
    """The spec the flags describe (None without ``--task``); every flag error is a one-line UsageError."""
    found = task_kind_from_flags(f)
    if found is None:
        return None
    kind, given = found
    if kind in TEXT_KINDS:
        return text_task_from_flags(kind, f, given)
    return media_task_from_flags(kind, f)


def resolve(spec: TaskSpec, io: IOSpec) -> TaskSpec:
    """``spec`` checked against the exported model's IO (a crop filled in from its input shape, a text
    model's inputs named); one-line UsageErrors name the mismatch."""
    return resolve_text(spec, io) if spec.is_text else resolve_media(spec, io)
