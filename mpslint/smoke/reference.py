"""torch CPU references for Metal ops: a small table (Metal op name -> torch function, input domains,
per-dtype tolerances) and the `reference_for(op)` hook that the dispatch graph can feed.

The Metal op name is the functor's name without `_functor` (REGISTER_UNARY_OP(exp, ...) -> "exp").  The
table only covers what the dispatch graph cannot tell; a Reference found by the caller's `reference_for`
hook wins over it.  torch is imported lazily (only when a reference is evaluated).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# default tolerances per output dtype: (atol, rtol); half/bfloat additionally accept 1 ulp of the output type
TOLERANCES: dict[str, tuple[float, float]] = {
    "float": (1e-5, 1e-5), "half": (1e-3, 1e-3), "bfloat": (1e-2, 1.6e-2),
    "float2": (1e-5, 1e-5), "half2": (1e-3, 1e-3),
}


@dataclass(frozen=True)
class Reference:
    """How to compute the expected value of an op on torch CPU.

    fn(*inputs, alpha=...) returns a tensor (or a tuple of tensors for custom kernels with several outputs).
    domain: one (lo, hi) range for every input, or a list of ranges, one per input (floats: uniform; integers:
    randint); `nonzero` lists input positions that must not be zero (divisors).
    """
    fn: Callable[..., Any]
    name: str = ""
    domain: Any = None
    nonzero: tuple = ()
    uses_alpha: bool = False
    tolerances: dict = field(default_factory=dict)
    integer_domain: Any = None          # ranges used for integer dtypes (default: domain clipped, else -10..10)
    note: str = ""

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tolerances.get(dtype, TOLERANCES.get(dtype, (0.0, 0.0)))


def _t():
    import torch
    return torch


def _u(fn_name: str, **kw) -> Reference:
    return Reference(lambda x, **_: getattr(_t(), fn_name)(x), name=f"torch.{fn_name}", **kw)


def _sp(fn_name: str, **kw) -> Reference:
    return Reference(lambda *a, **_: getattr(_t().special, fn_name)(*a), name=f"torch.special.{fn_name}", **kw)


def _nn(fn_name: str, **kw) -> Reference:
    return Reference(lambda *a, **_: getattr(_t().nn.functional, fn_name)(*a), name=f"torch.nn.functional.{fn_name}",
                     **kw)


def _b(fn_name: str, **kw) -> Reference:
    return Reference(lambda a, b, **_: getattr(_t(), fn_name)(a, b), name=f"torch.{fn_name}", **kw)


def _bf(fn_name: str, **kw) -> Reference:
    """A binary op torch CPU has no integer kernel for: integer inputs are compared on float32, as the MPS
    REGISTER_INT2FLOAT registrations compute them."""
    def fn(a, b, **_):
        f = [x if (x.is_floating_point() or x.is_complex()) else x.float() for x in (a, b)]
        return getattr(_t(), fn_name)(*f)
    return Reference(fn, name=f"torch.{fn_name}", note="integer inputs promoted to float32", **kw)


POS = (0.05, 4.0)
UNIT = (-0.95, 0.95)

_TABLE: dict[str, Reference] = {
    # ---- unary math
    "exp": _u("exp"), "exp2": _u("exp2"), "expm1": _u("expm1"), "log": _u("log", domain=POS),
    "log10": _u("log10", domain=POS), "log2": _u("log2", domain=POS), "log1p": _u("log1p", domain=(-0.9, 4.0)),
    "sqrt": _u("sqrt", domain=POS), "rsqrt": _u("rsqrt", domain=POS), "neg": _u("neg"), "abs": _u("abs"),
    "sin": _u("sin"), "cos": _u("cos"), "tan": _u("tan", domain=(-1.4, 1.4)), "sinh": _u("sinh"),
    "cosh": _u("cosh"), "tanh": _u("tanh"), "asin": _u("asin", domain=UNIT), "acos": _u("acos", domain=UNIT),
    "atan": _u("atan"), "asinh": _u("asinh"), "acosh": _u("acosh", domain=(1.05, 5.0)),
    "atanh": _u("atanh", domain=UNIT), "sigmoid": _u("sigmoid"), "erf": _u("erf"), "erfc": _u("erfc"),
    "erfinv": _u("erfinv", domain=UNIT), "reciprocal": _u("reciprocal", domain=POS), "sign": _u("sign"),
    "sgn": _u("sgn"), "signbit": _u("signbit"), "floor": _u("floor"), "ceil": _u("ceil"), "trunc": _u("trunc"),
    "round": _u("round"), "frac": _u("frac"), "bitwise_not": _u("bitwise_not"), "logical_not": _u("logical_not"),
    "square": _u("square"), "sinc": _u("sinc"), "lgamma": _u("lgamma", domain=POS),
    "digamma": _u("digamma", domain=POS), "i0": _u("i0"), "deg2rad": _u("deg2rad"), "rad2deg": _u("rad2deg"),
    "relu": _u("relu"), "positive": _u("positive"), "nan_to_num": _u("nan_to_num"),
    "i0e": _sp("i0e"), "i1": _sp("i1"), "i1e": _sp("i1e"), "entr": _sp("entr"), "ndtri": _sp("ndtri", domain=(0.02, 0.98)),
    "log_ndtr": _sp("log_ndtr"), "erfcx": _sp("erfcx", domain=(-2.0, 4.0)), "ndtr": _sp("ndtr"),
    "spherical_bessel_j0": _sp("spherical_bessel_j0"), "bessel_j0": _sp("bessel_j0"), "bessel_j1": _sp("bessel_j1"),
    "bessel_y0": _sp("bessel_y0", domain=POS), "bessel_y1": _sp("bessel_y1", domain=POS),
    "modified_bessel_i0": _sp("modified_bessel_i0"), "modified_bessel_i1": _sp("modified_bessel_i1"),
    "modified_bessel_k0": _sp("modified_bessel_k0", domain=POS),
    "modified_bessel_k1": _sp("modified_bessel_k1", domain=POS),
    "scaled_modified_bessel_k0": _sp("scaled_modified_bessel_k0", domain=POS),
    "scaled_modified_bessel_k1": _sp("scaled_modified_bessel_k1", domain=POS),
    "airy_ai": _sp("airy_ai"), "logit": _u("logit", domain=(0.02, 0.98)),
    # ---- activations
    "silu": _nn("silu"), "gelu": _nn("gelu"), "mish": _nn("mish"), "softplus": _nn("softplus"),
    "hardsigmoid": _nn("hardsigmoid"), "hardswish": _nn("hardswish"), "hardtanh": _nn("hardtanh"),
    "relu6": _nn("relu6"), "selu": _nn("selu"), "celu": _nn("celu"), "elu": _nn("elu"),
    "logsigmoid": _nn("logsigmoid"), "tanhshrink": _nn("tanhshrink"), "softsign": _nn("softsign"),
    "leaky_relu": Reference(lambda x, alpha=0.01, **_: _t().nn.functional.leaky_relu(x, float(alpha)),
                            name="torch.nn.functional.leaky_relu", uses_alpha=True),
    "hardshrink": Reference(lambda x, alpha=0.5, **_: _t().nn.functional.hardshrink(x, float(alpha)),
                            name="torch.nn.functional.hardshrink", uses_alpha=True),
    "softshrink": Reference(lambda x, alpha=0.5, **_: _t().nn.functional.softshrink(x, float(alpha)),
                            name="torch.nn.functional.softshrink", uses_alpha=True),
    "hardsigmoid_backward": Reference(lambda g, x, **_: _t().ops.aten.hardsigmoid_backward(g, x),
                                      name="aten.hardsigmoid_backward"),
    "hardswish_backward": Reference(lambda g, x, **_: _t().ops.aten.hardswish_backward(g, x),
                                    name="aten.hardswish_backward"),
    "hardshrink_backward": Reference(
        lambda g, x, alpha=0.5, **_: _t().ops.aten.hardshrink_backward(g, x, float(alpha)),
        name="aten.hardshrink_backward", uses_alpha=True),
    "softshrink_backward": Reference(
        lambda g, x, alpha=0.5, **_: _t().ops.aten.softshrink_backward(g, x, float(alpha)),
        name="aten.softshrink_backward", uses_alpha=True),
    "leaky_relu_backward": Reference(
        lambda g, x, alpha=0.01, **_: _t().ops.aten.leaky_relu_backward(g, x, float(alpha), False),
        name="aten.leaky_relu_backward", uses_alpha=True),
    # ---- binary
    "add": Reference(lambda a, b, alpha=1, **_: _t().add(a, b, alpha=alpha), name="torch.add", uses_alpha=True),
    "sub": Reference(lambda a, b, alpha=1, **_: _t().sub(a, b, alpha=alpha), name="torch.sub", uses_alpha=True),
    "mul": _b("mul"), "div_true": _b("true_divide", nonzero=(1,)), "div": _b("div", nonzero=(1,)),
    "div_floor": Reference(lambda a, b, **_: _t().div(a, b, rounding_mode="floor"), name="torch.div(floor)",
                           nonzero=(1,)),
    "div_trunc": Reference(lambda a, b, **_: _t().div(a, b, rounding_mode="trunc"), name="torch.div(trunc)",
                           nonzero=(1,)),
    "remainder": _b("remainder", nonzero=(1,)), "fmod": _b("fmod", nonzero=(1,)),
    "maximum": _b("maximum"), "minimum": _b("minimum"), "fmax": _b("fmax"), "fmin": _b("fmin"),
    "atan2": _b("atan2"), "copysign": _b("copysign"), "hypot": _b("hypot"), "logaddexp": _bf("logaddexp"),
    "logaddexp2": _bf("logaddexp2"), "xlogy": _b("xlogy", domain=[(-4.0, 4.0), POS]),
    "xlog1py": _sp("xlog1py", domain=[(-4.0, 4.0), (-0.9, 4.0)]), "nextafter": _b("nextafter"),
    "heaviside": _b("heaviside"), "pow": _b("pow", domain=[POS, (-3.0, 3.0)], integer_domain=[(0, 5), (0, 4)]),
    "bitwise_and": _b("bitwise_and"), "bitwise_or": _b("bitwise_or"), "bitwise_xor": _b("bitwise_xor"),
    "lshift": _b("bitwise_left_shift", integer_domain=[(0, 20), (0, 6)]),
    "rshift": _b("bitwise_right_shift", integer_domain=[(-20, 20), (0, 6)]),
    "eq": _b("eq"), "ne": _b("ne"), "lt": _b("lt"), "le": _b("le"), "gt": _b("gt"), "ge": _b("ge"),
    "logical_and": _b("logical_and"), "logical_or": _b("logical_or"), "logical_xor": _b("logical_xor"),
    "zeta": _sp("zeta", domain=[(1.1, 5.0), POS]), "igamma": _sp("gammainc", domain=[POS, POS]),
    "igammac": _sp("gammaincc", domain=[POS, POS]),
    "chebyshev_polynomial_t": _sp("chebyshev_polynomial_t", domain=[UNIT, (0.0, 6.0)]),
    "chebyshev_polynomial_u": _sp("chebyshev_polynomial_u", domain=[UNIT, (0.0, 6.0)]),
    "chebyshev_polynomial_v": _sp("chebyshev_polynomial_v", domain=[UNIT, (0.0, 6.0)]),
    "chebyshev_polynomial_w": _sp("chebyshev_polynomial_w", domain=[UNIT, (0.0, 6.0)]),
    "hermite_polynomial_h": _sp("hermite_polynomial_h", domain=[UNIT, (0.0, 6.0)]),
    "hermite_polynomial_he": _sp("hermite_polynomial_he", domain=[UNIT, (0.0, 6.0)]),
    "laguerre_polynomial_l": _sp("laguerre_polynomial_l", domain=[UNIT, (0.0, 6.0)]),
    "legendre_polynomial_p": _sp("legendre_polynomial_p", domain=[UNIT, (0.0, 6.0)]),
    "lerp_alpha": Reference(lambda a, b, alpha=0.5, **_: _t().lerp(a, b, alpha), name="torch.lerp",
                            uses_alpha=True),
    # Metal op names of UnaryKernel.metal that differ from the torch function's name (alpha = the scalar)
    "angle": _u("angle"), "sqr": _u("square"),
    "trigamma": Reference(lambda x, **_: _t().polygamma(1, x), name="torch.polygamma(1)", domain=POS),
    "polygamma": Reference(lambda x, alpha=1, **_: _t().polygamma(int(alpha), x), name="torch.polygamma",
                           domain=POS, uses_alpha=True),
    "round_decimals": Reference(lambda x, alpha=0, **_: _t().round(x, decimals=int(alpha)),
                                name="torch.round(decimals)", uses_alpha=True),
    "pow_scalar": Reference(lambda x, alpha=1, **_: _t().pow(x, alpha), name="torch.pow(scalar)", domain=POS,
                            integer_domain=(0, 5), uses_alpha=True),
    # Metal op names of BinaryKernel.metal that differ from the torch function's name
    "add_alpha": Reference(lambda a, b, alpha=1, **_: _t().add(a, b, alpha=alpha), name="torch.add",
                           uses_alpha=True),
    "sub_alpha": Reference(lambda a, b, alpha=1, **_: _t().sub(a, b, alpha=alpha), name="torch.sub",
                           uses_alpha=True),
    "bitwise_left_shift": _b("bitwise_left_shift", integer_domain=[(0, 20), (0, 6)]),
    "bitwise_right_shift": _b("bitwise_right_shift", integer_domain=[(-20, 20), (0, 6)]),
    "gcd": _b("gcd"), "lcm": _b("lcm"),
    "make_complex": _b("complex"), "polar": _b("polar", domain=[POS, (-3.0, 3.0)]),
    "shifted_chebyshev_polynomial_t": _sp("shifted_chebyshev_polynomial_t", domain=[(0.05, 0.95), (0.0, 6.0)],
                                          integer_domain=[(0, 1), (0, 6)]),
    "shifted_chebyshev_polynomial_u": _sp("shifted_chebyshev_polynomial_u", domain=[(0.05, 0.95), (0.0, 6.0)],
                                          integer_domain=[(0, 1), (0, 6)]),
    "shifted_chebyshev_polynomial_v": _sp("shifted_chebyshev_polynomial_v", domain=[(0.05, 0.95), (0.0, 6.0)],
                                          integer_domain=[(0, 1), (0, 6)]),
    "shifted_chebyshev_polynomial_w": _sp("shifted_chebyshev_polynomial_w", domain=[(0.05, 0.95), (0.0, 6.0)],
                                          integer_domain=[(0, 1), (0, 6)]),
    # ---- ternary
    "lerp": Reference(lambda a, b, w, **_: _t().lerp(a, b, w), name="torch.lerp"),
    "addcmul": Reference(lambda a, b, c, **_: _t().addcmul(a, b, c), name="torch.addcmul"),
    "addcdiv": Reference(lambda a, b, c, **_: _t().addcdiv(a, b, c), name="torch.addcdiv", nonzero=(2,)),
    "where": None,
    # ---- named references of TOML launch specs (mpslint/smoke/specs): fn(*initial buffers) -> (outputs,)
    "adaptive_avg_pool2d_backward": Reference(
        lambda g, grad_in, **_: (_t().ops.aten._adaptive_avg_pool2d_backward(g.double(), grad_in.double())
                                 .to(g.dtype),), name="aten._adaptive_avg_pool2d_backward"),
    # the upsample backward kernels add into grad_input (atomics); the gradient of F.interpolate by autograd,
    # in float64, at the sizes of the two buffers
    "upsample_nearest3d_backward": Reference(
        lambda gi, go, *_, **__: _interp_backward(gi, go, "nearest", None), name="autograd of interpolate(nearest)"),
    "upsample_nearest_exact3d_backward": Reference(
        lambda gi, go, *_, **__: _interp_backward(gi, go, "nearest-exact", None),
        name="autograd of interpolate(nearest-exact)"),
    "upsample_trilinear3d_backward": Reference(
        lambda gi, go, *_, **__: _interp_backward(gi, go, "trilinear", False), name="autograd of interpolate(trilinear)"),
    "upsample_bicubic2d_backward": Reference(
        lambda gi, go, *_, **__: _interp_backward(gi, go, "bicubic", False), name="autograd of interpolate(bicubic)"),
}
_TABLE = {k: v for k, v in _TABLE.items() if v is not None}


def _interp_backward(grad_in, grad_out, mode: str, align_corners):
    torch = _t()
    x = torch.zeros(grad_in.shape, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.interpolate(x, size=tuple(grad_out.shape[2:]), mode=mode, align_corners=align_corners)
    y.backward(grad_out.double())
    return ((grad_in.double() + x.grad).to(grad_in.dtype),)


def builtin_reference(op: str) -> Reference | None:
    return _TABLE.get(op)


def known_ops() -> list[str]:
    return sorted(_TABLE)


def resolve(op: str, hook: Optional[Callable[[str], Optional[Reference]]] = None) -> Reference | None:
    """The caller's hook first (fed by the dispatch graph), then the built-in table."""
    if hook is not None:
        try:
            r = hook(op)
        except Exception:      # a broken hook must not take the smoke run down
            r = None
        if r is not None:
            return r
    return builtin_reference(op)
