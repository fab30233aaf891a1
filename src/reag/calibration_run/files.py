"""Reading an expert-labelled set: one JSONL line per labelled criterion–response pair.

A bad line stops the run with its file and line number: a labelled set is
written by hand, and a silently skipped line would shift every threshold
fit on the rest.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reag.calibration.errors import CalibrationError
from reag.calibration.scores import Label
from reag.calibration.store import CalibrationItem, CalibrationStore
from reag.v1 import events_pb2 as pb


class LabelledFileError(CalibrationError):
    """A labelled-set JSONL file could not be read; the message names the file and line."""


class LabelledLine(BaseModel):
    """One line of a labelled set (e.g. examples/nutrition/calibration.jsonl)."""

    model_config = ConfigDict(extra="ignore")

    item_id: str = Field(min_length=1)
    app: str = Field(min_length=1)
    persona_category: str = ""
    query: str
    criterion: str = Field(min_length=1)
    actual_response: str
    label: Label
    explanation: str = ""
    test_objective: str = ""
    expected_results: str = ""
    persona_name: str = ""
    persona: str = Field(default="", description="Free-text persona description, if any.")

    def item(self) -> CalibrationItem:
        """The line as the judges are shown it: the same request a live criterion makes."""
        request = pb.JudgeRequest(
            criterion=pb.Criterion(criterion_id=self.item_id, text=self.criterion),
            query=self.query,
            actual_response=self.actual_response,
            persona=pb.Persona(
                category_id=self.persona_category,
                category_name=self.persona_name or self.persona_category,
                description=self.persona,
            ),
            test_objective=self.test_objective,
            expected_results=self.expected_results,
            n_criteria=1,
        )
        request.meta.case_id, request.meta.app = self.item_id, self.app
        request.meta.schema_version = pb.SCHEMA_VERSION_1
        return CalibrationItem(
            app=self.app,
            item_id=self.item_id,
            label=self.label,
            persona_category=self.persona_category,
            request=request,
            source="file",
            explanation=self.explanation,
        )


def read_labelled(path: Path) -> list[CalibrationItem]:
    """Every item of a labelled JSONL file; any bad line is an error naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelledFileError(f"cannot read labelled set {path}: {exc.strerror}") from exc
    items: list[CalibrationItem] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            parsed = LabelledLine.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise LabelledFileError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors()
            )
            raise LabelledFileError(f"{path}:{lineno}: {problems}") from exc
        key = (parsed.app, parsed.item_id)
        if key in seen:
            raise LabelledFileError(
                f"{path}:{lineno}: item {parsed.item_id!r} already appears on line {seen[key]}"
            )
        seen[key] = lineno
        items.append(parsed.item())
    if not items:
        raise LabelledFileError(f"{path}: no labelled items in the file")
    return items


def select_app(items: Sequence[CalibrationItem], app: str | None) -> str:
    """The one app to calibrate: thresholds are per app, so a mixed file must name one."""
    apps = sorted({i.app for i in items})
    if app is not None:
        if app not in apps:
            raise LabelledFileError(f"no item of app {app!r} in the labelled set; it has {apps}")
        return app
    if len(apps) > 1:
        raise LabelledFileError(f"the labelled set holds several apps {apps}; name one with --app")
    return apps[0]


async def ingest_labelled(
    store: CalibrationStore, path: Path, app: str | None
) -> tuple[str, list[CalibrationItem]]:
    """Add one app's items of a labelled file to the store: that app and its items, in file
    order (``app`` None: the file's only app)."""
    items = read_labelled(path)
    chosen = select_app(items, app)
    mine = [i for i in items if i.app == chosen]
    await asyncio.to_thread(store.add_items, mine)
    return chosen, mine
