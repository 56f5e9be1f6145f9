"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning, built from sarif-om objects.

What GitHub needs and this reporter provides: every rule with ``shortDescription``,
``fullDescription``, ``help.text``/``help.markdown`` and ``defaultConfiguration.level``; every
result with ``ruleId``, ``ruleIndex``, ``level``, a message and one location whose ``uri`` is relative
to the repository root, with ``startLine``/``startColumn``/``endLine``/``endColumn`` (UTF-16 code
units, the SARIF default); ``partialFingerprints.primaryLocationLineHash`` (our own hash of rule,
path, normalised line text and occurrence, so alerts survive code moving up or down);
``automationDetails.id``; the tool version. Suppressed findings never reach a reporter, so no result
carries ``suppressions`` (GitHub would show those as open alerts).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import attr
import sarif_om as om

from mpslint import __version__

from ._common import (
    SARIF_LEVEL,
    finding_keys,
    first_paragraph,
    line_hash,
    line_of,
    markdown_to_text,
    repo_relative,
    repo_root,
    rule_index,
    uri_for,
    utf16_col,
)

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
# Properties whose default value is still written: GitHub reads `level` even when it is "warning".
_ALWAYS = {"level"}


def to_json(obj):
    """sarif-om objects -> plain JSON values with the schema's property names; unset properties dropped."""
    if attr.has(type(obj)):
        out = {}
        for f in attr.fields(type(obj)):
            value = getattr(obj, f.name)
            if value is None:
                continue
            name = f.metadata.get("schema_property_name", f.name)
            default = f.default
            if isinstance(default, attr.Factory):
                default = default.factory()
            if default is not attr.NOTHING and value == default and name not in _ALWAYS:
                continue
            out[name] = to_json(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


def _descriptor(rule) -> om.ReportingDescriptor:
    doc = rule.doc()
    full = first_paragraph(doc) or rule.summary
    markdown = f"**{rule.code} {rule.name}** ({rule.severity.value})\n\n{doc}\n"
    tags = ["mpslint", rule.scope]
    if rule.fixable:
        tags.append(f"fix:{rule.fixable}")
    props = {"tags": tags, "precision": "high" if rule.default_enabled else "medium"}
    if rule.guide:
        props["guide"] = rule.guide
    return om.ReportingDescriptor(
        id=rule.code,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=rule.summary or rule.name),
        full_description=om.MultiformatMessageString(text=full),
        help=om.MultiformatMessageString(text=markdown_to_text(doc), markdown=markdown),
        default_configuration=om.ReportingConfiguration(level=SARIF_LEVEL[rule.severity.value], enabled=rule.default_enabled),
        properties=props,
    )


def _region(result, path, line, column, end_line, end_column) -> om.Region:
    first = line_of(result, path, line)
    last = first if end_line == line else line_of(result, path, end_line)
    sc, ec = utf16_col(first, column), utf16_col(last, end_column)
    if end_line == line and ec < sc:
        ec = sc
    return om.Region(start_line=line, start_column=sc, end_line=end_line, end_column=ec)


def _fix(result, finding, uris) -> om.Fix | None:
    fx = finding.fix
    if fx is None or not fx.edits:
        return None
    changes: dict[str, list] = {}
    for e in fx.edits:
        if not e.line:
            return None
        changes.setdefault(e.path, []).append(
            om.Replacement(
                deleted_region=_region(result, e.path, e.line, e.column, e.end_line, e.end_column),
                inserted_content=om.ArtifactContent(text=e.content),
            )
        )
    desc = fx.message if fx.applicability == "safe" else f"{fx.message} (unsafe: review before applying)"
    return om.Fix(
        description=om.Message(text=desc),
        artifact_changes=[
            om.ArtifactChange(artifact_location=om.ArtifactLocation(uri=uris(p)), replacements=reps) for p, reps in changes.items()
        ],
        properties={"applicability": fx.applicability},
    )


def build(result, cwd: Path | None = None, automation_id: str | None = None) -> om.SarifLog:
    cwd = Path(cwd or Path.cwd()).resolve()
    root = repo_root(cwd)
    cache: dict[str, str] = {}

    def uris(path: str) -> str:
        if path not in cache:
            cache[path] = uri_for(repo_relative(path, cwd, root))
        return cache[path]

    rules = rule_index(result)
    index = {code: i for i, code in enumerate(rules)}
    keys = finding_keys(result.findings, cwd, root)
    results = []
    for f, key in zip(result.findings, keys):
        s = f.span
        fix = _fix(result, f, uris)
        results.append(
            om.Result(
                message=om.Message(text=f.message),
                rule_id=f.code,
                rule_index=index.get(f.code, -1),
                level=SARIF_LEVEL[f.severity.value],
                locations=[
                    om.Location(
                        physical_location=om.PhysicalLocation(
                            artifact_location=om.ArtifactLocation(uri=uris(f.path)),
                            region=_region(result, f.path, s.line, s.column, s.end_line, s.end_column),
                        )
                    )
                ],
                partial_fingerprints={"primaryLocationLineHash": line_hash(key)},
                fixes=[fix] if fix is not None else None,
                properties={"mpslint": dict(f.extra)} if f.extra else None,
            )
        )
    notifications = []
    for e in result.errors:
        loc = om.Location(
            physical_location=om.PhysicalLocation(
                artifact_location=om.ArtifactLocation(uri=uris(e.path)),
                region=om.Region(start_line=e.line) if e.line else None,
            )
        )
        notifications.append(om.Notification(message=om.Message(text=e.message), level="warning", locations=[loc]))
    for msg in result.internal_errors:
        notifications.append(om.Notification(message=om.Message(text=msg.splitlines()[0]), level="error"))
    for msg in getattr(result, "problems", []):
        notifications.append(om.Notification(message=om.Message(text=msg), level="error"))
    if automation_id is None:
        run_id = os.environ.get("GITHUB_RUN_ID", "")
        automation_id = f"mpslint/{run_id}"
    driver = om.ToolComponent(
        name="mpslint",
        version=__version__,
        semantic_version=__version__,
        rules=[_descriptor(r) for r in rules.values()],
    )
    run = om.Run(
        tool=om.Tool(driver=driver),
        automation_details=om.RunAutomationDetails(id=automation_id),
        column_kind="utf16CodeUnits",
        invocations=[
            om.Invocation(
                execution_successful=not result.internal_errors,
                tool_execution_notifications=notifications or None,
            )
        ],
        results=results,
    )
    return om.SarifLog(runs=[run], version="2.1.0", schema_uri=SCHEMA_URI)


def render(result, cwd=None, automation_id=None, **_) -> str:
    doc = to_json(build(result, cwd, automation_id))
    ordered = {"$schema": doc.pop("$schema"), "version": doc.pop("version"), **doc}
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
