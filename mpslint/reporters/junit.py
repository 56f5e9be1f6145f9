"""``--format junit``: JUnit XML for CI test-report views.

One ``<testsuite>`` per linted file; each finding is a failing ``<testcase>``, a clean file has one
passing test case. Text is escaped by the XML writer, and characters XML 1.0 cannot carry at all
(control characters) are replaced, so the report always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(s: str) -> str:
    return _INVALID_XML.sub("\ufffd", s)


def render(result, **_) -> str:
    by_path: dict[str, list] = {}
    linted = sorted(getattr(result.project, "linted", ()) or ()) if getattr(result, "project", None) is not None else []
    for p in linted:
        by_path.setdefault(p, [])
    for f in result.findings:
        by_path.setdefault(f.path, []).append(f)
    for e in result.errors:
        by_path.setdefault(e.path, [])
    errors_by_path: dict[str, list] = {}
    for e in result.errors:
        errors_by_path.setdefault(e.path, []).append(e)
    root = ET.Element("testsuites", name="mpslint")
    total_f = total_t = total_e = 0
    for path in sorted(by_path):
        findings = by_path[path]
        errs = errors_by_path.get(path, [])
        suite = ET.SubElement(root, "testsuite", name=clean(path))
        n_tests = max(1, len(findings)) + len(errs)
        for f in findings:
            s = f.span
            case = ET.SubElement(suite, "testcase", name=clean(f"{f.code} {f.name} at line {s.line}, column {s.column}"), classname=clean(path), file=clean(path), line=str(s.line))
            fail = ET.SubElement(case, "failure", message=clean(f.message), type=f.code)
            fail.text = clean(f"{path}:{s.line}:{s.column}: {f.code} [{f.severity.value}] {f.message}")
        if not findings and not errs:
            ET.SubElement(suite, "testcase", name="mpslint", classname=clean(path), file=clean(path))
        for e in errs:
            case = ET.SubElement(suite, "testcase", name="mpslint: read", classname=clean(path), file=clean(path))
            err = ET.SubElement(case, "error", message=clean(e.message), type="FileError")
            err.text = clean(str(e))
        suite.set("tests", str(n_tests))
        suite.set("failures", str(len(findings)))
        suite.set("errors", str(len(errs)))
        total_t += n_tests
        total_f += len(findings)
        total_e += len(errs)
    for msg in result.internal_errors:
        suite = ET.SubElement(root, "testsuite", name="mpslint", tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", name="mpslint: internal", classname="mpslint")
        err = ET.SubElement(case, "error", message=clean(msg.splitlines()[0]), type="InternalError")
        err.text = clean(msg)
        total_t += 1
        total_e += 1
    root.set("tests", str(total_t))
    root.set("failures", str(total_f))
    root.set("errors", str(total_e))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
