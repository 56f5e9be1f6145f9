"""Reaching definitions, guard logic (what a check proves and what it must not), ranges, extents."""

from __future__ import annotations

from mpslint.semantic.ranges import INT32_MAX, UINT32_MAX, Interval, mul, mod, bit_and, minimum
from mpslint.semantic.types import parse_type

from ._build import decl, fn_model, host_model, metal_model


def _fm(body: str, name: str = "f", pre: str = ""):
    model, facts = host_model(pre + "void " + name + "(const Tensor& t, const Tensor& u, int64_t n, bool flag) {\n" + body + "\n}\n")
    return fn_model(model, facts, name)


def _probe(fm, var="probe"):
    return decl(fm, var)


def _hi(fm, var="probe"):
    node, stmt = _probe(fm, var)
    return fm.range(node, stmt).hi


# ------------------------------------------------------------------ reaching definitions
def test_value_keeps_origin_through_locals():
    fm = _fm("auto a = t.numel();\nauto b = a;\nauto probe = b;")
    node, stmt = _probe(fm)
    assert fm.key(node, stmt) == "t.numel()"


def test_reassignment_kills_the_initialiser():
    fm = _fm("auto a = t.numel();\na = u.numel();\nauto probe = a;")
    node, stmt = _probe(fm)
    assert fm.key(node, stmt) == "u.numel()"


def test_assignment_in_a_branch_keeps_both_values():
    fm = _fm("auto a = t.numel();\nif (flag) {\n  a = u.numel();\n}\nauto probe = a;")
    node, stmt = _probe(fm)
    vals = fm.values("a", stmt)
    assert len(vals) == 2 and fm.key(node, stmt) == "a"


def test_assignment_in_a_returning_branch_does_not_reach():
    fm = _fm("auto a = t.numel();\nif (flag) {\n  a = u.numel();\n  return;\n}\nauto probe = a;")
    node, stmt = _probe(fm)
    assert fm.key(node, stmt) == "t.numel()"


def test_loop_assignment_reaches_uses_before_it_in_the_loop():
    fm = _fm("int64_t a = 0;\nfor (int i = 0; i < 4; i++) {\n  auto probe = a;\n  a = t.numel();\n}")
    node, stmt = _probe(fm)
    assert len(fm.values("a", stmt)) == 2


def test_tensor_alias_is_tracked_by_binding():
    fm = _fm("const Tensor& src = t;\nauto probe = src.numel();")
    node, stmt = _probe(fm)
    assert fm.key(node, stmt) == "t.numel()"


# ------------------------------------------------------------------ guards
def test_check_bounds_the_value_it_compares():
    fm = _fm("TORCH_CHECK(t.numel() <= UINT32_MAX, \"x\");\nauto probe = t.numel();")
    assert _hi(fm) == UINT32_MAX


def test_check_on_factor_does_not_bound_product():
    fm = _fm("TORCH_CHECK(t.size(0) <= INT32_MAX, \"x\");\nauto probe = t.size(0) * t.size(1);")
    assert _hi(fm) is None or _hi(fm) > UINT32_MAX


def test_product_bound_bounds_each_size_factor():
    fm = _fm("TORCH_CHECK(t.size(0) * t.size(1) <= INT32_MAX, \"x\");\nauto probe = t.size(1);")
    assert _hi(fm) == INT32_MAX


def test_a_byte_count_is_the_product_of_its_spellings():
    # `t.nbytes()` is `t.numel() * t.element_size()` (and `itemsize()` is `element_size()`), in either order
    for check, probe in [
        ("t.numel() * t.element_size() < UINT32_MAX", "t.nbytes()"),
        ("t.element_size() * t.numel() < UINT32_MAX", "t.nbytes()"),
        ("t.nbytes() < UINT32_MAX", "t.numel() * t.itemsize()"),
        ("t.nbytes() < UINT32_MAX", "t.itemsize() * t.numel()"),
    ]:
        fm = _fm(f"TORCH_CHECK({check}, \"x\");\nauto probe = {probe};")
        assert _hi(fm) is not None and _hi(fm) < UINT32_MAX, (check, probe)


def test_a_byte_count_of_another_dtype_is_not_bounded_by_the_original():
    fm = _fm("auto h = t.to(at::kHalf);\nTORCH_CHECK(t.nbytes() < UINT32_MAX, \"x\");\nauto probe = h.nbytes();")
    assert _hi(fm) is None or _hi(fm) > UINT32_MAX
    fm = _fm("TORCH_CHECK(t.numel() < UINT32_MAX, \"x\");\nauto probe = t.nbytes();")
    assert _hi(fm) is None or _hi(fm) > UINT32_MAX


def test_and_proves_both_or_proves_only_common():
    fm = _fm("TORCH_CHECK(t.numel() <= 10 && u.numel() <= 20, \"x\");\nauto probe = u.numel();")
    assert _hi(fm) == 20
    fm = _fm("TORCH_CHECK(t.numel() <= 10 || u.numel() <= 20, \"x\");\nauto probe = u.numel();")
    assert _hi(fm) != 20
    fm = _fm("TORCH_CHECK(t.numel() <= 10 || t.numel() <= 20, \"x\");\nauto probe = t.numel();")
    assert _hi(fm) == 20


def test_bitwise_operators_on_bools_are_logical():
    """`a <= 10 & b <= 20` on two comparisons is `&&` without the short circuit; `|` is `||`; on integers they
    are masks and prove no comparison."""
    fm = _fm("TORCH_CHECK(t.numel() <= 10 & u.numel() <= 20, \"x\");\nauto probe = u.numel();")
    assert _hi(fm) == 20
    fm = _fm("TORCH_CHECK(t.numel() <= 10 | u.numel() <= 20, \"x\");\nauto probe = u.numel();")
    assert _hi(fm) != 20
    fm = _fm("if (t.numel() > 10 | u.numel() > 20) {\n  return;\n}\nauto probe = u.numel();")
    assert _hi(fm) == 20
    fm = _fm("TORCH_CHECK((n & 0xff) <= 10, \"x\");\nauto probe = n;")
    assert _hi(fm) != 10


def test_negation_and_early_exit():
    fm = _fm("if (!(t.numel() <= 100)) {\n  TORCH_CHECK(false, \"x\");\n}\nauto probe = t.numel();")
    assert _hi(fm) == 100
    fm = _fm("if (t.numel() > 100) {\n  return;\n}\nauto probe = t.numel();")
    assert _hi(fm) == 100


def test_check_that_does_not_dominate_proves_nothing():
    fm = _fm("if (flag) {\n  TORCH_CHECK(t.numel() <= 100, \"x\");\n}\nauto probe = t.numel();")
    assert _hi(fm) != 100
    fm = _fm("auto probe = t.numel();\nTORCH_CHECK(t.numel() <= 100, \"x\");")
    assert _hi(fm) != 100


def test_branch_conditions():
    fm = _fm("if (t.numel() > 100) {\n  auto probe = t.numel();\n} else {\n  auto other = t.numel();\n}")
    node, stmt = decl(fm, "other")
    assert fm.range(node, stmt).hi == 100
    assert _hi(fm) != 100


def test_loop_counter_bound_is_not_an_element_bound():
    fm = _fm("for (int64_t i = 0; i < 8; i++) {\n  auto probe = t.size(i);\n  auto ii = i;\n}")
    assert _hi(fm) != 7
    node, stmt = decl(fm, "ii")
    assert fm.range(node, stmt).hi == 7


def test_split_iterator_bounds_numel():
    model, facts = host_model(
        "static void g(TensorIteratorBase& iter) {\n  if (!iter.can_use_32bit_indexing()) {\n    return;\n  }\n  auto probe = iter.numel();\n}\n"
    )
    fm = fn_model(model, facts, "g")
    assert _hi(fm) == INT32_MAX


def test_boolean_helper_summary_is_applied():
    pre = "static bool small(int64_t h) {\n  return h <= 256 && h > 0;\n}\n"
    fm = _fm("TORCH_CHECK(small(n), \"x\");\nauto probe = n;", pre=pre)
    assert _hi(fm) == 256
    node, stmt = _probe(fm)
    assert fm.range(node, stmt).lo == 1


def test_helper_of_guard_chain_is_summarised():
    pre = ("static bool fits_kernel(int64_t h, int64_t q) {\n  if (q <= 8)\n    return false;\n"
           "  if (h > 256)\n    return false;\n  return h >= 32;\n}\n")
    fm = _fm("TORCH_CHECK(fits_kernel(n, t.size(2)), \"x\");\nauto probe = n;\nauto q = t.size(2);", pre=pre)
    node, stmt = _probe(fm)
    assert fm.range(node, stmt) == Interval(32, 256)
    q, qs = decl(fm, "q")
    assert fm.range(q, qs).lo == 9


def test_switch_helper_is_summarised_as_its_true_labels():
    pre = ("inline bool supported(int64_t d) {\n  switch (d) {\n    case 32:\n    case 64:\n    case 128:\n"
           "      return true;\n    default:\n      return false;\n  }\n}\n")
    fm = _fm("if (!supported(n)) {\n  return;\n}\nauto probe = n;", pre=pre)
    node, stmt = _probe(fm)
    assert fm.range(node, stmt) == Interval(32, 128)


def test_membership_in_a_constant_table_bounds_the_value():
    """`std::find(sizes.begin(), sizes.end(), h) != sizes.end()` over a literal table: h is within its values."""
    table = "std::vector<int> sizes = {32, 64, 80, 256};\n"
    find = "std::find(sizes.begin(), sizes.end(), h) {op} sizes.end()"
    pre = "static bool valid(int64_t h) {\n  " + table + "  return " + find + ";\n}\n"
    fm = _fm("TORCH_CHECK(valid(n), \"x\");\nauto probe = n;", pre=pre.replace("{op}", "!="))
    node, stmt = _probe(fm)
    assert fm.range(node, stmt) == Interval(32, 256)
    # inline in the op, a set's own find, an array and `count`
    fm = _fm("const std::array<int64_t, 3> ok = {8, 16, 32};\nTORCH_CHECK(std::find(ok.begin(), ok.end(), n) != ok.end(), \"x\");\nauto probe = n;")
    assert _hi(fm) == 32
    fm = _fm("static const std::set<int64_t> ok = {8, 16};\nTORCH_CHECK(ok.find(n) != ok.end(), \"x\");\nauto probe = n;")
    assert _hi(fm) == 16
    fm = _fm("static const std::set<int64_t> ok = {8, 16};\nif (!ok.count(n)) {\n  return;\n}\nauto probe = n;")
    assert _hi(fm) == 16
    # must NOT bound: not found (`==`), a table something writes, a table of run-time values, only one arm
    fm = _fm("TORCH_CHECK(valid(n), \"x\");\nauto probe = n;", pre=pre.replace("{op}", "=="))
    assert _hi(fm) == (1 << 63) - 1
    fm = _fm("std::vector<int64_t> ok = {8, 16};\nok.push_back(t.size(0));\nTORCH_CHECK(std::find(ok.begin(), ok.end(), n) != ok.end(), \"x\");\nauto probe = n;")
    assert _hi(fm) == (1 << 63) - 1
    fm = _fm("std::vector<int64_t> ok = {8, t.size(0)};\nTORCH_CHECK(std::find(ok.begin(), ok.end(), n) != ok.end(), \"x\");\nauto probe = n;")
    assert _hi(fm) == (1 << 63) - 1
    fm = _fm("const std::array<int64_t, 2> ok = {8, 16};\nTORCH_CHECK(flag || std::find(ok.begin(), ok.end(), n) != ok.end(), \"x\");\nauto probe = n;")
    assert _hi(fm) == (1 << 63) - 1


def test_sizeof_a_scalar_type_is_exact():
    fm = _fm("TORCH_CHECK(n <= 100 && n >= 0, \"x\");\nauto probe = 4 * n * sizeof(float);")
    assert _hi(fm) == 1600
    fm = _fm("TORCH_CHECK(n <= 100 && n >= 0, \"x\");\nauto probe = n * sizeof(int64_t);\nauto h = n * sizeof(at::Half);\nauto p = n * sizeof(Params);\nauto e = n * sizeof(n);")
    assert _hi(fm) == 800
    assert _hi(fm, "h") == 200
    assert _hi(fm, "p") == 100 << 16  # a struct: any size up to 64 KB
    assert _hi(fm, "e") == 100 << 16  # an expression's size: the same


def test_switch_helper_with_a_true_default_proves_nothing():
    pre = ("inline bool supported(int64_t d) {\n  switch (d) {\n    case 32:\n      return false;\n"
           "    default:\n      return true;\n  }\n}\n")
    fm = _fm("TORCH_CHECK(supported(n), \"x\");\nauto probe = n;", pre=pre)
    assert _hi(fm) == (1 << 63) - 1  # only its type: the helper is not summarised


def test_disjunction_arm_refuted_by_another_exit():
    # `if (!fast && !other) return; if (other) return;` leaves `fast`, and what it proves
    body = ("const bool fast = t.size(2) <= 8;\nconst bool other = flag;\n"
            "if (!fast && !other) {\n  return;\n}\nif (other) {\n  return;\n}\nauto probe = t.size(2);")
    fm = _fm(body)
    assert _hi(fm) == 8


def test_disjunction_without_a_refuting_check_proves_only_the_common_part():
    body = ("const bool fast = t.size(2) <= 8;\nconst bool other = flag;\n"
            "if (!fast && !other) {\n  return;\n}\nauto probe = t.size(2);")
    fm = _fm(body)
    assert _hi(fm) == (1 << 63) - 1  # `fast || other`: only what both arms prove, nothing


def test_offsets_fit_in_bounds_each_tensor():
    fm = _fm("const bool narrow = offsetsFitIn<uint32_t>(t, u);\nif (narrow) {\n  auto probe = u.numel();\n}")
    assert _hi(fm) == UINT32_MAX


def test_shape_key_sees_through_copies_and_a_conditional_copy():
    fm = _fm("Tensor c = flag ? t : t.contiguous();\nauto probe = c.size(1);\nauto s = c.stride(1);")
    node, stmt = _probe(fm)
    assert fm.key(node, stmt) == "t.size(1)"
    s, ss = decl(fm, "s")
    assert fm.key(s, ss) != "t.stride(1)"  # contiguous() changes strides


def test_counter_that_only_grows_keeps_its_start_as_floor():
    fm = _fm("for (int64_t i = 0; i < 4; i++) {\n  auto probe = i;\n}")
    node, stmt = _probe(fm)
    assert fm.range(node, stmt) == Interval(0, 3)
    down = _fm("for (int64_t i = 3; i < 4; i--) {\n  auto probe = i;\n}")
    node, stmt = _probe(down)
    assert down.range(node, stmt).lo is None or down.range(node, stmt).lo < 0  # it decreases: no floor
    stepped = _fm("int64_t k = 8;\nwhile (k < n) {\n  auto probe = k;\n  k += 4;\n}")
    node, stmt = _probe(stepped)
    assert stepped.range(node, stmt).lo == 8


def test_bool_flag_local_carries_its_bound():
    fm = _fm("const bool ok = t.numel() <= 1000;\nif (ok) {\n  auto probe = t.numel();\n}")
    assert _hi(fm) == 1000


# ------------------------------------------------------------------ ranges and extents
def test_constants_min_mod_mask_shift():
    fm = _fm("constexpr int64_t kTile = 64;\nconst auto m = std::min<int64_t>(kTile, t.size(0));\nauto probe = m;")
    assert _hi(fm) == 64
    fm = _fm("auto probe = t.numel() % 32;")
    assert _hi(fm) == 31
    fm = _fm("auto probe = t.numel() & 0xFF;")
    assert _hi(fm) == 255
    fm = _fm("auto probe = (t.numel() & 0xFF) >> 4;")
    assert _hi(fm) == 15


def test_dimension_counts_are_small():
    fm = _fm("auto probe = t.dim();")
    assert _hi(fm) == 64
    fm = _fm("auto probe = t.sizes().size();")
    assert _hi(fm) == 64


def test_extents():
    fm = _fm("auto a = t.numel();\nauto b = t.size(0);\nauto c = t.size(0) * t.stride(0);\nauto d = t.dim();\nauto e = t.nbytes();")
    assert [fm.extent(*decl(fm, x)) for x in "abcde"] == ["linear", "dim", "linear", None, "linear"]


def test_a_dimension_scaled_by_an_argument_is_a_dimension():
    """`n * (t.size(2) - 1)` with `n` an integer argument (a dilation) is one dimension; times a size, an element
    size or a parameter that holds a size by then, it is a linear extent."""
    fm = _fm("auto a = n * (t.size(2) - 1) + 1;\nauto b = t.size(2) * t.size(3);\nauto c = t.size(2) * t.element_size();\nconst int64_t m = n;\nauto d = m * t.size(0);")
    assert [fm.extent(*decl(fm, x)) for x in "abcd"] == ["dim", "linear", "linear", "dim"]
    fm = _fm("n = t.size(0);\nauto e = n * t.size(1);")
    assert fm.extent(*decl(fm, "e")) == "linear"


def test_an_element_of_a_sizes_local_is_one_size_of_its_tensor():
    """`IntArrayRef s = t.sizes(); s[0]` is `t.sizes()[0]`: one dimension of `t` (a stride through a strides local
    too), and a product of two is a linear extent; an element of an array of another origin is neither."""
    fm = _fm("IntArrayRef s = t.sizes();\nauto st = t.strides();\nstd::vector<int64_t> v = {4, 8};\n"
             "auto a = s[0];\nauto b = s[0] * s[1];\nauto c = st[1];\nauto d = v[0];")
    assert [fm.extent(*decl(fm, x)) for x in "abcd"] == ["dim", "linear", "dim", None]
    node, stmt = decl(fm, "a")
    assert fm.sized_from(node, stmt) == {("t", "size")} and fm.key(node, stmt) == "t.sizes()[0]"
    node, stmt = decl(fm, "c")
    assert fm.sized_from(node, stmt) == {("t", "stride")}
    assert fm.sized_from(*decl(fm, "d")) == set()


def test_an_else_if_chain_whose_arms_all_return_proves_each_condition_false():
    chain = "if (t.numel() == 0) {\n  return;\n} else if (u.numel() == 0) {\n  return;\n}\nauto probe = t.numel();\nauto other = u.numel();"
    fm = _fm(chain)
    assert fm.range(*decl(fm, "probe")).lo == 1 and fm.range(*decl(fm, "other")).lo == 1


def test_an_if_that_returns_proves_its_negation_after_an_else_that_does_not():
    fm = _fm("if (t.numel() == 0) {\n  return;\n} else {\n  u.zero_();\n}\nauto probe = t.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 1


def test_an_else_if_arm_that_falls_through_proves_only_the_arms_before_it():
    fm = _fm("if (t.numel() == 0) {\n  return;\n} else if (u.numel() == 0) {\n  u.zero_();\n}\nauto probe = t.numel();\nauto other = u.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 1 and fm.range(*decl(fm, "other")).lo == 0
    fm = _fm("if (t.numel() == 0) {\n  u.zero_();\n} else if (u.numel() == 0) {\n  return;\n}\nauto probe = t.numel();\nauto other = u.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 0 and fm.range(*decl(fm, "other")).lo == 0  # `t empty || u non-empty`


def test_a_branch_jumps_when_any_of_its_statements_does_not_only_the_last():
    # `return ...; ;`: upstream's batch norm has a stray empty statement after its early return
    fm = _fm("if (t.numel() == 0) {\n  return;\n  ;\n}\nauto probe = t.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 1
    # an assignment to a local named like a jump is not one
    fm = _fm("int64_t returned = 0;\nif (t.numel() == 0) {\n  returned = 1;\n}\nauto probe = t.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 0
    # a statement that opens with a parenthesis (a cast to void) is read, not mistaken for a jump
    fm = _fm("if (t.numel() == 0) {\n  (void)u;\n}\nauto probe = t.numel();")
    assert fm.range(*decl(fm, "probe")).lo == 0


def test_a_chain_whose_every_arm_jumps_claims_nothing_after_it():
    # the end of the if is unreachable: no condition is claimed for what follows
    fm = _fm("if (t.numel() == 0) {\n  return;\n} else if (u.numel() == 0) {\n  return;\n} else {\n  return;\n}\nauto probe = t.numel();")
    node, stmt = decl(fm, "probe")
    assert fm.conditions(stmt) == []


def test_interval_arithmetic():
    assert mul(Interval(0, 10), Interval(0, 5)) == Interval(0, 50)
    assert mul(Interval(0, None), Interval(2, 3)) == Interval(0, None)
    assert mod(Interval(0, None), Interval(8, 8)) == Interval(0, 7)
    assert bit_and(Interval(None, None), Interval(0, 15)) == Interval(0, 15)
    assert minimum(Interval(0, None), Interval(5, 5)) == Interval(0, 5)


def test_metal_constant_products_are_bounded():
    model, facts = metal_model(
        "kernel void k(constant uint& n [[buffer(0)]], uint tid [[thread_position_in_grid]]) {\n"
        "  const uint k4 = 4;\n  auto probe = k4 * 8;\n  auto wide = tid * n;\n}\n"
    )
    fm = fn_model(model, facts, "k")
    assert _hi(fm) == 32
    node, stmt = decl(fm, "wide")
    assert fm.range(node, stmt).hi == UINT32_MAX  # uint * uint wraps in uint


def test_typedef_of_bfloat_is_bfloat():
    assert parse_type("bfloat16_t", {"bfloat16_t": "bfloat"}).name == "bfloat"
    assert parse_type("device const bfloat16_t*", {"bfloat16_t": "bfloat"}).elem.name == "bfloat"


def test_emptiness_tests_give_lower_bounds():
    fm = _fm("if (t.numel() == 0) {\n  return;\n}\nauto probe = t.numel();")
    node, stmt = _probe(fm)
    assert fm.range(node, stmt).lo == 1
    fm = _fm("if (!t.numel()) {\n  return;\n}\nauto probe = t.numel();")
    node, stmt = _probe(fm)
    assert fm.range(node, stmt).lo == 1
    fm = _fm("if (t.numel()) {\n  auto probe = t.numel();\n}")
    node, stmt = _probe(fm)
    assert fm.range(node, stmt).lo == 1
    fm = _fm("if (n == 0) {\n  return;\n}\nauto probe = n;")
    node, stmt = _probe(fm)
    assert fm.range(node, stmt).lo < 0  # n may be negative: n != 0 says nothing about a lower bound


def test_a_nonzero_count_proves_what_it_is_computed_from_nonzero():
    """`if (rows == 0 || d == 0) return;` with `rows = (uint32_t)(t.numel() / t.size(-1))`: t has elements."""
    def lo(body, var="probe"):
        fm = _fm(body)
        node, stmt = _probe(fm, var)
        return fm.range(node, stmt).lo

    rows = "const uint32_t rows = static_cast<uint32_t>(t.numel() / t.size(-1));\n"
    assert lo(rows + "const uint32_t d = t.size(-1) / 2;\nif (rows == 0 || d == 0) return;\nauto probe = t.numel();") == 1
    assert lo("if (t.size(0) * t.size(1) == 0) return;\nauto probe = t.size(1);") == 1
    assert lo("auto c = t.size(0) * u.size(0);\nTORCH_CHECK(c > 0, \"x\");\nauto probe = u.size(0);") == 1
    # must NOT prove it: the count is not computed from numel; a sum; a numerator that may be negative
    assert lo("const uint32_t d = t.size(-1) / 2;\nif (d == 0) return;\nauto probe = t.numel();") == 0
    assert lo("if (t.size(0) + t.size(1) == 0) return;\nauto probe = t.size(1);") == 0
    assert lo("if (n / t.size(0) == 0) return;\nauto probe = n;") is None or lo("if (n / t.size(0) == 0) return;\nauto probe = n;") < 1


def test_numel_bound_bounds_each_size_not_strides():
    fm = _fm("TORCH_CHECK(t.numel() <= INT32_MAX, \"x\");\nauto probe = t.size(1);\nauto s = t.stride(1);\nauto o = u.size(0);")
    assert _hi(fm) == INT32_MAX
    node, stmt = decl(fm, "s")
    assert fm.range(node, stmt).hi > UINT32_MAX  # a slice's stride is not bounded by its element count
    node, stmt = decl(fm, "o")
    assert fm.range(node, stmt).hi > UINT32_MAX  # another tensor


def test_32bit_index_math_bounds_sizes_and_strides():
    fm = _fm("const bool ok = canUse32BitIndexMath(t) && canUse32BitIndexMath(u);\nif (ok) {\n  auto probe = t.stride(2);\n  auto w = u.size(0);\n}\nauto outside = t.stride(2);")
    assert _hi(fm) == INT32_MAX
    node, stmt = decl(fm, "w")
    assert fm.range(node, stmt).hi == INT32_MAX
    node, stmt = decl(fm, "outside")
    assert fm.range(node, stmt).hi > UINT32_MAX


def test_mpsgraph_size_check_bounds_each_dimension_not_the_element_count():
    # `isTooLargeForMPSGraph` compares each size with INT32_MAX: a contiguous 32769 x 65536 tensor passes it
    fm = _fm("if (isTooLargeForMPSGraph(t)) {\n  return;\n}\nauto probe = t.size(1);\nauto count = t.numel();\nauto s = t.stride(0);\nauto o = u.size(0);")
    assert _hi(fm) == INT32_MAX
    for name in ("count", "s", "o"):
        node, stmt = decl(fm, name)
        assert fm.range(node, stmt).hi > UINT32_MAX, name
    node, stmt = decl(fm, "count")
    assert "t.numel()" not in fm.bounds(stmt) and "t#dims" in fm.bounds(stmt)


def test_or_accumulated_flag_proves_every_dominating_arm_false():
    body = ("bool large = false;\nif (flag) {\n  large |= isTooLargeForMPSGraph(u);\n}\nlarge |= t.numel() > INT32_MAX;\n"
            "if (!large) {\n  auto probe = t.numel();\n  auto w = u.size(0);\n}\nauto after = t.numel();")
    fm = _fm(body)
    assert _hi(fm) == INT32_MAX
    node, stmt = decl(fm, "w")
    assert fm.range(node, stmt).hi > UINT32_MAX  # that `|=` ran only when `flag` held
    node, stmt = decl(fm, "after")
    assert fm.range(node, stmt).hi > UINT32_MAX  # outside the branch


def test_or_accumulated_flag_reset_by_a_plain_assignment_proves_nothing():
    fm = _fm("bool large = false;\nlarge |= t.numel() > INT32_MAX;\nlarge = flag;\nif (!large) {\n  auto probe = t.numel();\n}")
    assert _hi(fm) > UINT32_MAX


# ---------------------------------------------------------------- reads after a declaration
def _read(body: str, name: str) -> bool:
    fm = _fm(body)
    d = [x for x in fm.fn.decls if x.name == name][-1]
    return fm.read_after(name, d.stmt)


def test_a_local_nothing_reads_is_not_read():
    assert not _read("uint32_t n = t.numel();\nauto m = t.size(0);\nreturn;", "n")


def test_reads_in_calls_declarations_blocks_macros_and_assignments_count():
    assert _read("uint32_t n = t.numel();\nlaunch(enc, n);", "n")
    assert _read("uint32_t n = t.numel();\nstd::vector<uint32_t> v(n, 1);", "n")  # constructor-style: no tree
    assert _read("uint32_t n = t.numel();\ndispatch_sync(q, ^() {\n  mtl_setArgs(enc, n);\n});", "n")
    assert _read("uint32_t n = t.numel();\nTORCH_INTERNAL_ASSERT(n > 0);", "n")
    assert _read("uint32_t n = t.numel();\nbuf[n] = 0;", "n")
    assert _read("uint32_t n = t.numel();\nauto k = static_cast<int>(n);", "n")


def test_a_member_or_a_longer_name_is_not_a_read():
    assert not _read("uint32_t n = t.numel();\nauto a = p.n;\nauto nn = 1;", "n")


# ---------------------------------------------------------------- validating void helpers (checkers)
_CHECKER = (
    "static void check_fits(int64_t size, const char* name) {\n"
    "  constexpr int64_t kMax = 2147483647LL;\n"
    "  TORCH_CHECK(size <= kMax, name, \" exceeds int32\");\n"
    "}\n"
)


def test_a_checker_call_bounds_what_it_is_passed_and_each_size_factor():
    fm = _fm("check_fits(t.size(0) * t.size(1), \"rows\");\nauto probe = t.size(1);", pre=_CHECKER)
    assert _hi(fm) == INT32_MAX
    fm = _fm("check_fits(n, \"n\");\nauto probe = n;", pre=_CHECKER)
    assert _hi(fm) == INT32_MAX


def test_a_checker_does_not_bound_before_the_call_or_another_value():
    fm = _fm("auto probe = t.size(1);\ncheck_fits(t.size(1), \"rows\");", pre=_CHECKER)
    assert _hi(fm) != INT32_MAX
    fm = _fm("check_fits(t.size(0), \"rows\");\nauto probe = t.size(1);", pre=_CHECKER)
    assert _hi(fm) != INT32_MAX


def test_a_checker_with_a_failure_branch_is_summarised_by_its_negation():
    pre = "static void check_small(int64_t k) {\n  if (k > 4096) {\n    TORCH_CHECK(false, \"too big\");\n  }\n}\n"
    fm = _fm("check_small(n);\nauto probe = n;", pre=pre)
    assert _hi(fm) == 4096


def test_a_void_function_that_does_more_than_check_is_not_a_checker():
    # an early return skips the check on some path; a loop or a plain call makes it more than a validator
    for body in ("  if (size == 0) return;\n  TORCH_CHECK(size <= 1024);\n",
                 "  for (int i = 0; i < 2; i++) {}\n  TORCH_CHECK(size <= 1024);\n",
                 "  log(size);\n  TORCH_CHECK(size <= 1024);\n"):
        pre = "static void maybe_check(int64_t size) {\n" + body + "}\n"
        fm = _fm("maybe_check(n);\nauto probe = n;", pre=pre)
        assert _hi(fm) != 1024, body


def test_a_checker_call_inside_a_branch_does_not_dominate_the_other_path():
    fm = _fm("if (flag) {\n  check_fits(n, \"n\");\n}\nauto probe = n;", pre=_CHECKER)
    assert _hi(fm) != INT32_MAX


def test_a_comparison_uses_what_earlier_checks_proved_about_its_other_side():
    # `m < n` where an enclosing check keeps `n < 8`: m <= 6
    fm = _fm("auto m = t.size(0);\nif (n < 8) {\n  if (m < n) {\n    auto probe = m;\n  }\n}")
    assert _hi(fm) == 6


def test_a_checker_called_with_a_defaulted_parameter_proves_nothing_under_the_callers_names():
    # the check on the helper's defaulted `n` is not about the caller's own `n`
    pre = "static void check_cap(int64_t size, int64_t n = 8) {\n  TORCH_CHECK(n <= 1024);\n}\n"
    fm = _fm("check_cap(t.size(0));\nauto probe = n;", pre=pre)
    assert _hi(fm) != 1024


# ------------------------------------------------------------------ flag parameters


def _entered(body: str, **flags):
    model, facts = host_model("void f(const Tensor& t, const Tensor& u, int64_t n, bool flag) {\n" + body + "\n}\n")
    fn = next(f for f in facts.functions if f.name == "f")
    return model.function(fn, facts, {k: Interval.point(int(v)) for k, v in flags.items()} or None)


def test_flag_parameter_disjunction_proves_nothing_on_its_own():
    fm = _entered("TORCH_CHECK(flag || t.numel() <= 1000);\nauto probe = t.numel();")
    assert _hi(fm) == (1 << 63) - 1


def test_flag_parameter_entered_false_leaves_the_other_arm():
    fm = _entered("TORCH_CHECK(flag || t.numel() <= 1000);\nauto probe = t.numel();", flag=False)
    assert _hi(fm) == 1000


def test_flag_parameter_entered_true_proves_nothing():
    fm = _entered("TORCH_CHECK(flag || t.numel() <= 1000);\nauto probe = t.numel();", flag=True)
    assert _hi(fm) == (1 << 63) - 1


def test_flag_parameter_refuted_by_an_earlier_check():
    fm = _entered("TORCH_CHECK(!flag);\nTORCH_CHECK(flag || t.numel() <= 1000);\nauto probe = t.numel();")
    assert _hi(fm) == 1000
    fm = _entered("if (flag) {\n  return;\n}\nTORCH_CHECK(flag || t.size(0) < 64);\nauto probe = t.size(0);")
    assert _hi(fm) == 63


def test_reassigned_flag_parameter_is_not_an_atom():
    # `flag = n > 4;` after entry: the value the caller passed no longer decides the check
    fm = _entered("flag = n > 4;\nTORCH_CHECK(flag || t.numel() <= 1000);\nauto probe = t.numel();", flag=False)
    assert _hi(fm) == (1 << 63) - 1


def test_flag_parameter_branch_is_not_pruned_by_the_entry_value():
    # entered with `flag` false, the `if (flag)` branch is still judged as written (its own condition holds there)
    fm = _entered("if (flag) {\n  auto probe = t.numel();\n}", flag=False)
    assert _hi(fm) == (1 << 63) - 1


# ---------------------------------------------------------------- statement order
def test_runs_after_stops_at_a_block_that_returns():
    from mpslint.semantic.definitions import runs_after, runs_before

    fm = _fm("if (flag) {\n  auto a = t.numel();\n  return;\n}\nauto b = t.numel();\nif (n > 0) {\n  auto c = t.numel();\n}\nauto d = t.numel();")
    at = {d.name: d.stmt for d in fm.fn.decls}
    assert not runs_after(fm.fn, at["a"], at["b"])  # the branch holding `a` returns first
    assert runs_after(fm.fn, at["b"], at["d"]) and runs_after(fm.fn, at["c"], at["d"])
    assert not runs_after(fm.fn, at["d"], at["b"])  # earlier in the text
    assert runs_before(fm.fn, at["b"], at["c"])  # an enclosing level, earlier
    assert not runs_before(fm.fn, at["c"], at["d"])  # inside a branch `d` does not sit in
    assert not runs_before(fm.fn, at["a"], at["b"])
