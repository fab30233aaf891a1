"""Where a label comes from: a person at a terminal, or a file of labels for scripted runs.

Both answer the same question for one abstained criterion: YES, NO, skip it,
or stop reviewing. Streams are injected, so the terminal labeller is tested
with ``io.StringIO`` and no terminal.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TextIO

from reag.v1 import events_pb2 as pb

Action = Literal["label", "skip", "quit"]

_LABEL_ANSWERS: dict[str, pb.Label.ValueType] = {
    "y": pb.LABEL_YES,
    "yes": pb.LABEL_YES,
    "n": pb.LABEL_NO,
    "no": pb.LABEL_NO,
}
_ACTION_ANSWERS: dict[str, Action] = {"s": "skip", "skip": "skip", "q": "quit", "quit": "quit"}


class LabelFileError(ValueError):
    """A ``--labels-from`` file that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    label: pb.Label.ValueType = pb.LABEL_UNSPECIFIED
    comment: str = ""


SKIP = Decision("skip")
QUIT = Decision("quit")


class Labeler(Protocol):
    async def decide(self, abstain: pb.Abstain) -> Decision: ...

    def finished(self) -> bool:
        """True when no further item can get a label (a label file used up)."""
        ...


class TerminalLabeler:
    """Asks on ``output`` and reads ``input``; end of input means quit."""

    def __init__(self, input_stream: TextIO, output: TextIO) -> None:
        self._input = input_stream
        self._output = output

    async def _ask(self, prompt: str) -> str | None:
        self._output.write(prompt)
        self._output.flush()
        line = await asyncio.to_thread(self._input.readline)
        return None if line == "" else line.strip()

    async def decide(self, abstain: pb.Abstain) -> Decision:
        while True:
            answer = await self._ask(
                "Does the response satisfy the criterion? [y]es / [n]o / [s]kip / [q]uit: "
            )
            if answer is None:
                return QUIT
            action = _ACTION_ANSWERS.get(answer.lower())
            if action is not None:
                return SKIP if action == "skip" else QUIT
            label = _LABEL_ANSWERS.get(answer.lower())
            if label is None:
                self._output.write(f"  {answer!r} is not an answer; type y, n, s or q.\n")
                continue
            comment = await self._ask("Comment (optional, Enter for none): ")
            return Decision("label", label, comment or "")

    def finished(self) -> bool:
        return False


def parse_label(value: object) -> pb.Label.ValueType:
    label = _LABEL_ANSWERS.get(value.strip().lower()) if isinstance(value, str) else None
    if label is not None:
        return label
    raise ValueError(f"label must be YES or NO, got {value!r}")


class ScriptedLabeler:
    """Labels from a JSONL file, one ``{"criterion_id": ..., "label": "YES"|"NO"}`` per line
    (optional ``"comment"``). Criteria the file does not name are skipped."""

    def __init__(self, labels: dict[str, Decision]) -> None:
        self._labels = dict(labels)
        self._used: set[str] = set()

    @classmethod
    def from_file(cls, path: Path) -> ScriptedLabeler:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise LabelFileError(f"cannot read labels file {path}: {exc.strerror}") from exc
        labels: dict[str, Decision] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LabelFileError(f"{where}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or not record.get("criterion_id"):
                raise LabelFileError(
                    f'{where}: each line needs {{"criterion_id": ..., "label": ...}}'
                )
            try:
                label = parse_label(record.get("label"))
            except ValueError as exc:
                raise LabelFileError(f"{where}: {exc}") from exc
            labels[str(record["criterion_id"])] = Decision(
                "label", label, str(record.get("comment", ""))
            )
        if not labels:
            raise LabelFileError(f"{path} holds no labels")
        return cls(labels)

    async def decide(self, abstain: pb.Abstain) -> Decision:
        criterion_id = abstain.request.criterion.criterion_id
        decision = self._labels.get(criterion_id)
        if decision is None:
            return SKIP
        self._used.add(criterion_id)
        return decision

    def finished(self) -> bool:
        return self._used >= set(self._labels)
