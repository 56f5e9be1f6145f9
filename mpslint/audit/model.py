"""The audit's data: one record per op family, one per overload, and the totals. Plain dicts out (``to_dict``)."""

from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA = "mpslint-audit"
SCHEMA_VERSION = 1

# Per-overload classes: the path MPS takes for that overload.
CLASSES = ("native-stub", "native-mps", "mpsgraph", "mixed", "fallback", "composite", "unknown")
NATIVE = frozenset({"native-stub", "native-mps"})
# Classes of overloads that reach an MPS implementation (their own MPS key or through structured_delegate).
MPS_CLASSES = frozenset({"native-stub", "native-mps", "mpsgraph", "mixed", "unknown"})

# Per-family rollups (see family_class for the exact definition).
FAMILY_CLASSES = ("native", "mixed", "mpsgraph", "unknown", "fallback", "composite")

CLASS_DOC = {
    "native-stub": "MPS shares the CPU/CUDA dispatch line and the stub it reaches has an MPS REGISTER_DISPATCH in the tree",
    "native-mps": "an MPS-specific function that launches Metal kernels and builds no MPSGraph",
    "mpsgraph": "the MPS implementation builds an MPSGraph (directly or through helpers)",
    "mixed": "the MPS implementation both launches Metal kernels and builds an MPSGraph",
    "fallback": "no MPS key and not composite: runs on the CPU fallback (PYTORCH_ENABLE_MPS_FALLBACK=1)",
    "composite": "no MPS key; CompositeImplicitAutograd/CompositeExplicitAutograd or no dispatch: decomposes",
    "unknown": "the implementation was not found in the given tree",
}

FAMILY_DOC = {
    "native": "every overload that reaches MPS is native Metal (native-stub or native-mps)",
    "mixed": "half migrated: some overloads native, some on MPSGraph (or an overload that is itself mixed)",
    "mpsgraph": "every overload that reaches MPS builds an MPSGraph",
    "unknown": "some overloads reach MPS through an implementation not in the tree, and the rest do not decide it",
    "fallback": "no overload reaches MPS and at least one runs on the CPU fallback",
    "composite": "every overload is composite (decomposes into other ops)",
}


@dataclass
class OverloadAudit:
    name: str
    line: int
    cls: str
    route: str  # mps_route kind: "shared" | "mps_specific" | "composite" | "none"
    kernel: str | None  # the MPS dispatch name (after structured_delegate)
    via: list[str]
    explanation: str
    implementations: list[dict] = field(default_factory=list)  # {name, path, line, role, mpsgraph, metal}
    stubs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "line": self.line,
            "class": self.cls,
            "route": self.route,
            "kernel": self.kernel,
            "via": list(self.via),
            "explanation": self.explanation,
            "implementations": self.implementations,
            "stubs": list(self.stubs),
        }


@dataclass
class OpAudit:
    family: str
    cls: str
    overloads: list[OverloadAudit]
    kernels: list[dict] = field(default_factory=list)  # {name, dtypes, paths}
    unresolved_kernels: list[str] = field(default_factory=list)  # kernel names asked for, not registered in the tree
    xfails: list[dict] = field(default_factory=list)  # {list, key, dtypes, path, line}
    findings: list[dict] = field(default_factory=list)  # {code, path, line, message, overload}

    @property
    def dispatch(self) -> str:
        """What the yaml alone says: "shared" (every overload reaching MPS is on a shared CPU/CUDA line),
        "mps-only" (every one names an MPS-only function), "partly-shared" (both), "none" (no MPS route)."""
        routes = {o.route for o in self.overloads if o.route in ("shared", "mps_specific")}
        if not routes:
            return "none"
        if routes == {"shared"}:
            return "shared"
        return "mps-only" if routes == {"mps_specific"} else "partly-shared"

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.overloads:
            out[o.cls] = out.get(o.cls, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "family": self.family,
            "class": self.cls,
            "dispatch": self.dispatch,
            "overload_counts": self.counts(),
            "overloads": [o.to_dict() for o in self.overloads],
            "kernels": self.kernels,
            "unresolved_kernels": self.unresolved_kernels,
            "xfails": self.xfails,
            "findings": self.findings,
        }


def family_class(classes: list[str]) -> str:
    """Roll the classes of one family's overloads up into the family's class.

    Let K be the classes of the overloads that reach MPS (native-stub, native-mps, mpsgraph, mixed, unknown):
    - K empty: "fallback" if any overload is fallback, else "composite";
    - "mixed" if an overload is mixed, or K holds both a native class and mpsgraph;
    - "unknown" if K holds unknown (and is not mixed by the rule above);
    - "native" if K holds native classes only; "mpsgraph" if K holds mpsgraph only.
    Fallback and composite overloads of a family that reaches MPS do not change its class (they are counted apart).
    """
    k = {c for c in classes if c in MPS_CLASSES}
    if not k:
        return "fallback" if "fallback" in classes else "composite"
    if "mixed" in k or (k & NATIVE and "mpsgraph" in k):
        return "mixed"
    if "unknown" in k:
        return "unknown"
    if k <= NATIVE:
        return "native"
    return "mpsgraph"


def percent(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 1) if den else None


def totals(ops: list[OpAudit]) -> dict:
    ov = {c: 0 for c in CLASSES}
    fam = {c: 0 for c in FAMILY_CLASSES}
    shared = specific = 0
    partial_fallback = 0
    fam_dispatch = {"shared": 0, "partly-shared": 0, "mps-only": 0}
    for op in ops:
        fam[op.cls] += 1
        if op.dispatch in fam_dispatch:
            fam_dispatch[op.dispatch] += 1
        if op.cls not in ("fallback", "composite") and any(o.cls == "fallback" for o in op.overloads):
            partial_fallback += 1
        for o in op.overloads:
            ov[o.cls] += 1
            if o.route == "shared":
                shared += 1
            elif o.route == "mps_specific":
                specific += 1
    nat_ov = ov["native-stub"] + ov["native-mps"]
    known_ov = nat_ov + ov["mpsgraph"] + ov["mixed"]
    known_fam = fam["native"] + fam["mpsgraph"] + fam["mixed"]
    return {
        "overloads": ov,
        "overloads_total": sum(ov.values()),
        "overloads_mps": sum(ov[c] for c in MPS_CLASSES),
        "ops": fam,
        "ops_total": len(ops),
        "ops_mps": sum(fam[c] for c in ("native", "mixed", "mpsgraph", "unknown")),
        "ops_with_fallback_overloads": partial_fallback,
        # native / (native + mpsgraph + mixed): unknown, fallback and composite are left out (None when nothing is known)
        "percent_migrated": {"overloads": percent(nat_ov, known_ov), "ops": percent(fam["native"], known_fam)},
        # what the yaml alone says: overloads reaching MPS through a shared line vs an MPS-only function
        "dispatch": {
            "shared_line": shared,
            "mps_only_line": specific,
            "percent_shared": percent(shared, shared + specific),
            "ops": fam_dispatch,
        },
    }


@dataclass
class Audit:
    ops: list[OpAudit]
    source: dict  # {native_functions, paths, host_files, metal_files, python_files, rules}
    tool: str

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "tool": self.tool,
            "source": self.source,
            "totals": totals(self.ops),
            "ops": [op.to_dict() for op in self.ops],
        }


def load_report(data: dict) -> dict:
    """Validate a JSON report read back from disk (for ``--compare``); raises ValueError when it is not one."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError("not an mpslint audit report (no \"schema\": \"mpslint-audit\")")
    v = data.get("schema_version")
    if v != SCHEMA_VERSION:
        raise ValueError(f"audit report schema version {v!r}; this mpslint reads version {SCHEMA_VERSION}")
    if not isinstance(data.get("ops"), list):
        raise ValueError("audit report has no \"ops\" list")
    return data


# JSON Schema (draft 2020-12) of the report, for tools that consume it; tests validate every report against it.
_CLS = {"enum": list(CLASSES)}
_NULLABLE_PCT = {"type": ["number", "null"], "minimum": 0, "maximum": 100}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "mpslint audit report",
    "type": "object",
    "required": ["schema", "schema_version", "tool", "source", "totals", "ops"],
    "properties": {
        "schema": {"const": SCHEMA},
        "schema_version": {"const": SCHEMA_VERSION},
        "tool": {"type": "string"},
        "source": {"type": "object", "required": ["native_functions"]},
        "totals": {
            "type": "object",
            "required": ["ops", "overloads", "ops_total", "overloads_total", "percent_migrated", "dispatch"],
            "properties": {
                "ops": {**_COUNTS, "propertyNames": {"enum": list(FAMILY_CLASSES)}},
                "overloads": {**_COUNTS, "propertyNames": _CLS},
                "percent_migrated": {
                    "type": "object",
                    "required": ["ops", "overloads"],
                    "properties": {"ops": _NULLABLE_PCT, "overloads": _NULLABLE_PCT},
                },
            },
        },
        "ops": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["family", "class", "dispatch", "overloads", "kernels", "xfails", "findings"],
                "properties": {
                    "family": {"type": "string"},
                    "class": {"enum": list(FAMILY_CLASSES)},
                    "dispatch": {"enum": ["shared", "partly-shared", "mps-only", "none"]},
                    "overloads": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["name", "line", "class", "route", "kernel", "via", "explanation"],
                            "properties": {
                                "name": {"type": "string"},
                                "line": {"type": "integer"},
                                "class": _CLS,
                                "route": {"enum": ["shared", "mps_specific", "composite", "none"]},
                                "kernel": {"type": ["string", "null"]},
                                "via": {"type": "array", "items": {"type": "string"}},
                                "explanation": {"type": "string", "minLength": 1},
                            },
                        },
                    },
                    "kernels": {
                        "type": "array",
                        "items": {"type": "object", "required": ["name", "dtypes", "paths"]},
                    },
                    "xfails": {"type": "array", "items": {"type": "object", "required": ["list", "key", "path", "line"]}},
                    "findings": {"type": "array", "items": {"type": "object", "required": ["code", "path", "line", "message"]}},
                },
            },
        },
        "compare": {
            "type": "object",
            "required": ["newly_migrated", "regressed", "new_mixed"],
        },
    },
}
