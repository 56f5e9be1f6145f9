"""``semantic.platform``: code that only macOS releases older than the supported floor run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint.config import Config, ConfigError, load_config
from mpslint.engine import LintOptions, lint
from mpslint.facts.host import host_facts
from mpslint.semantic import hostflow as hf
from mpslint.semantic import platform
from mpslint.source import LineIndex

from ..conftest import FIXTURES, ROOT

V14 = (14, 0)


def _fn(body: str):
    src = "void f(const Tensor& t, bool b) {\n" + body + "\n}\n"
    facts = host_facts("t.mm", src, LineIndex(src))
    return facts.functions[0]


def _cond(expr: str):
    fn = _fn(f"  if ({expr}) {{\n    g();\n  }}")
    return fn.stmts[0].tree


@pytest.mark.parametrize(
    "expr,value",
    [
        ("is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", True),
        ("is_macos_13_or_newer(MacOSVersion::MACOS_VER_13_3_PLUS)", True),
        ("at::mps::is_macos_13_or_newer(at::mps::MacOSVersion::MACOS_VER_14_0_PLUS)", True),
        ("is_macos_13_or_newer()", True),
        ("!is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", False),
        ("(!(is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)))", False),
        ("is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_4_PLUS)", None),  # newer than the floor: decides nothing
        ("is_macos_13_or_newer(MacOSVersion::MACOS_VER_15_0_PLUS)", None),
        ("is_macos_13_or_newer(version)", None),  # not an enumerator
        ("b && is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", None),
        ("b && !is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", False),
        ("b || is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", True),
        ("b || !is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)", None),
        ("MPSDevice::getInstance()->isMacOS13Plus(MacOSVersion::MACOS_VER_13_1_PLUS)", True),
        ("is_macos_at_least(MacOSVersion::MACOS_14_0)", True),
        ("!is_macos_at_least(MacOSVersion::MACOS_15_0)", None),
        ("t.numel() > 0", None),
    ],
)
def test_value_on_supported_releases(expr, value):
    assert platform.value_on_supported(_cond(expr), V14) is value


def test_the_floor_decides_which_checks_are_known():
    cond = _cond("is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)")
    assert platform.value_on_supported(cond, (13, 0)) is None
    assert platform.value_on_supported(cond, (15, 0)) is True


def test_statements_under_an_unsupported_branch():
    fn = _fn(
        "  if (is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)) {\n    live();\n  } else {\n    dead();\n  }\n"
        "  if (!is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)) {\n    dead2();\n    return;\n  }\n  after();"
    )
    texts = {s.text.strip(): platform.unsupported_condition(fn, k, V14) is not None for k, s in enumerate(fn.stmts)}
    assert texts["live();"] is False and texts["after();"] is False
    assert texts["dead();"] is True and texts["dead2();"] is True and texts["return;"] is True


def test_unsupported_code_follows_static_helpers_to_a_fixpoint():
    src = (
        "static int leaf(int x) { return x; }\n"
        "static void mid(int x) { leaf(x); }\n"
        "static int other(int x) { return x; }\n"
        "static void shared(int x) { other(x); }\n"
        "void entry(int x) {\n"
        "  if (is_macos_13_or_newer(MacOSVersion::MACOS_VER_14_0_PLUS)) {\n    shared(x);\n  } else {\n    mid(x);\n    shared(x);\n  }\n}\n"
    )
    facts = host_facts("t.mm", src, LineIndex(src))
    hosts = {"t.mm": facts}
    spans = platform.unsupported_code(hosts, V14, hf._call_sites(hosts), set(), set())["t.mm"]
    dead = {fn.name for fn in facts.functions if any(a <= fn.span.start < b for a, b in spans)}
    assert dead == {"mid", "leaf"}  # `leaf` only from `mid`, which only the dead branch calls; `shared` has a live call


def _fixture_codes(cfg: Config) -> set[tuple[int, str]]:
    path = FIXTURES / "aten/src/ATen/native/mps/operations/MacOSFallbacks.mm"
    res = lint(LintOptions(paths=[str(path)], select=["MPS102", "MPS110"], cwd=ROOT, config=cfg))
    return {(f.span.line, f.code) for f in res.findings}


def test_min_macos_setting_turns_the_fallbacks_back_on():
    default, old = _fixture_codes(Config()), _fixture_codes(Config(min_macos="13.0"))
    assert default < old
    gained = old - default
    assert {code for _, code in gained} == {"MPS102", "MPS110"} and len(gained) == 4


@pytest.mark.parametrize("value,ok", [('"14.0"', "14.0"), ('"13"', "13"), ("15", "15"), ('"fourteen"', None), ("true", None)])
def test_min_macos_config_values(tmp_path: Path, value, ok):
    p = tmp_path / "pyproject.toml"
    p.write_text(f"[tool.mpslint]\nmin-macos = {value}\n")
    if ok is None:
        with pytest.raises(ConfigError, match="min-macos"):
            load_config(p)
    else:
        assert load_config(p).min_macos == ok
