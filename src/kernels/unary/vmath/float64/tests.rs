//! Accuracy, special values and bitwise path agreement of the float64
//! functions.

// the tables of mpmath values hold values near pi, ln 2 and such
#![allow(clippy::approx_constant)]

use super::*;
use crate::kernels::unary::vmath::test_support::{
    either_nan, pow_grid, pow_paths_agree, Rng, POW_BASES, SPECIALS,
};
use crate::kernels::unary::vmath::{self, Unary};

mod more;
mod pow;

const SIGN: u64 = 1 << 63;

/// Distance in ulps between two float64 (through zero if the signs
/// differ; 0 for two NaNs).
fn ulps(a: f64, b: f64) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let ord = |v: f64| {
        let m = (v.to_bits() & !SIGN) as i128;
        if v.to_bits() & SIGN != 0 {
            -m
        } else {
            m
        }
    };
    (ord(a) - ord(b)).unsigned_abs() as u64
}

/// Inputs: 2^21 random bit patterns (every magnitude and sign), 2^21
/// uniform in each of `ranges`, and `edges` with their neighbours.
fn inputs(ranges: &[(f64, f64)], edges: &[f64]) -> Vec<f64> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut xs: Vec<f64> = (0..1 << 21).map(|_| f64::from_bits(rng.next())).collect();
    for &(lo, hi) in ranges {
        xs.extend((0..1 << 21).map(|_| rng.uniform(lo, hi)));
    }
    for &e in edges {
        for v in [e, -e] {
            xs.push(v);
            xs.push(f64::from_bits(v.to_bits() + 1));
            xs.push(f64::from_bits(v.to_bits().wrapping_sub(1)));
        }
    }
    xs
}

const EDGES: [f64; 12] = [
    0.0,
    1.0,
    0.5,
    0.3466,
    0.875,
    6.0,
    20.0,
    709.78,
    745.1,
    1e-300,
    f64::MIN_POSITIVE,
    5e-324,
];

/// The largest error in ulps of `fast` against `exact` over `xs`
/// (where the exact value is subnormal, in units of the smallest
/// subnormal: the same thing).
fn max_ulps(xs: &[f64], fast: impl Fn(f64) -> f64, exact: impl Fn(f64) -> f64) -> (u64, f64) {
    let mut worst = (0, 0.0);
    for &x in xs {
        let u = ulps(fast(x), exact(x));
        if u > worst.0 {
            worst = (u, x);
        }
    }
    worst
}

fn check(
    name: &str,
    fast: impl Fn(f64) -> f64,
    exact: impl Fn(f64) -> f64,
    ranges: &[(f64, f64)],
    max: u64,
) {
    let xs = inputs(ranges, &EDGES);
    let (u, x) = max_ulps(&xs, &fast, &exact);
    eprintln!("{name}: max {u} ulps against libm (at {x:e})");
    assert!(
        u <= max,
        "{name}: {u} ulps at x = {x:e} (got {:e}, want {:e})",
        fast(x),
        exact(x)
    );
}

#[test]
fn exp_is_accurate() {
    check("exp", exp_f64, f64::exp, &[(-750.0, 750.0), (-1.0, 1.0)], 1);
}
#[test]
fn exp_m1_is_accurate() {
    check(
        "exp_m1",
        exp_m1_f64,
        f64::exp_m1,
        &[(-50.0, 50.0), (-1.0, 1.0), (-720.0, 720.0)],
        2,
    );
}
#[test]
fn ln_is_accurate() {
    check("ln", ln_f64, f64::ln, &[(0.0, 4.0), (0.5, 1.5)], 1);
}
#[test]
fn ln_1p_is_accurate() {
    check(
        "ln_1p",
        ln_1p_f64,
        f64::ln_1p,
        &[(-1.0, 4.0), (-0.5, 0.5), (-1e-6, 1e-6)],
        1,
    );
}
#[test]
fn log2_is_accurate() {
    check("log2", log2_f64, f64::log2, &[(0.0, 4.0), (0.5, 1.5)], 1);
    for k in -1074..1024 {
        let x = match k {
            ..-1022 => f64::from_bits(1 << (k + 1074)),
            _ => f64::from_bits(((k + 1023) as u64) << 52),
        };
        assert_eq!(log2_f64(x), k as f64);
    }
}
#[test]
fn log10_is_accurate() {
    check(
        "log10",
        log10_f64,
        f64::log10,
        &[(0.0, 20.0), (0.5, 1.5)],
        2,
    );
}
#[test]
fn tanh_is_accurate() {
    check(
        "tanh",
        tanh_f64,
        f64::tanh,
        &[(-25.0, 25.0), (-1.0, 1.0)],
        4,
    );
}
/// `1 / (1 + e)`, `e = e^-x` by libm, the sum and the quotient in
/// double-double arithmetic.
fn sigmoid_ref(x: f64) -> f64 {
    let e = (-x).exp();
    let d = 1.0 + e;
    let d_lo = if e > 1.0 {
        (e - d) + 1.0
    } else {
        (1.0 - d) + e
    };
    let q = 1.0 / d;
    // 1 - q (d + d_lo), exactly enough
    let res = (-q).mul_add(d, 1.0) - q * d_lo;
    if d.is_infinite() {
        0.0
    } else {
        q + res / d
    }
}

#[test]
fn sigmoid_and_silu_are_accurate() {
    // the reference: 1 / (1 + e^-x) with libm's e^-x and the rest in
    // double-double arithmetic (within about 1 ulp of sigmoid)
    let ranges = [(-750.0, 750.0), (-40.0, 40.0)];
    check("sigmoid", sigmoid_f64, sigmoid_ref, &ranges, 3);
    check("silu", silu_f64, |x| x * sigmoid_ref(x), &ranges, 4);
}
#[test]
fn log_sigmoid_is_accurate() {
    let exact = |x: f64| x.min(0.0) - (-x.abs()).exp().ln_1p();
    check(
        "log_sigmoid",
        log_sigmoid_f64,
        exact,
        &[(-750.0, 750.0), (-40.0, 40.0)],
        2,
    );
}
#[test]
fn erf_is_accurate() {
    check(
        "erf",
        erf_f64,
        libm::erf,
        &[(-7.0, 7.0), (-1.0, 1.0), (0.8, 1.0)],
        1,
    );
}
#[test]
fn trig_is_accurate() {
    let ranges = [
        (-10.0, 10.0),
        (-1e6, 1e6),
        (-TRIG_LIMIT_F64, TRIG_LIMIT_F64),
    ];
    check("sin", sin_f64, f64::sin, &ranges, 1);
    check("cos", cos_f64, f64::cos, &ranges, 1);
    check("tan", tan_f64, f64::tan, &ranges, 3);
    // the reduced forms themselves, right up to the limit
    let near: Vec<f64> = (0..1 << 16)
        .map(|i| TRIG_LIMIT_F64 - i as f64 * 0.37)
        .collect();
    assert!(max_ulps(&near, sin_f64_reduced, f64::sin).0 <= 1);
    assert!(max_ulps(&near, cos_f64_reduced, f64::cos).0 <= 1);
}

#[test]
fn gelu_is_accurate() {
    // 1 + erf(x/√2) cancels for x << 0: an absolute error of a few ulp
    // of 1, times |x|, as torch's
    let xs = inputs(&[(-10.0, 10.0)], &EDGES);
    for x in xs {
        let want = x * 0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2);
        let got = gelu_f64(x);
        let tol = 4.0 * f64::EPSILON * (want.abs() + x.abs()) + 1e-300;
        if want.is_finite() {
            assert!(
                (got - want).abs() <= tol,
                "gelu({x:e}) = {got:e}, want {want:e}"
            );
        }
    }
}

#[test]
fn matches_high_precision_values() {
    // (x, f(x) correctly rounded), computed in mpmath at 60 digits
    type Table = &'static [(f64, f64)];
    let tables: [(&str, Table); 11] = [
        (
            "exp",
            &[
                (1.0, 2.718281828459045),
                (-1.0, 0.36787944117144233),
                (0.5, 1.6487212707001282),
                (10.0, 22026.465794806718),
                (-10.0, 4.5399929762484854e-05),
                (700.0, 1.0142320547350045e+304),
                (-700.0, 9.85967654375977e-305),
                (-745.0, 5e-324),
                (1e-10, 1.0000000001),
                (0.34657359027997264, 1.414213562373095),
            ],
        ),
        (
            "ln",
            &[
                (2.0, 0.6931471805599453),
                (0.5, -0.6931471805599453),
                (10.0, 2.302585092994046),
                (1.0000001, 9.999999505838704e-08),
                (0.9999999, -1.0000000494736474e-07),
                (1e-300, -690.7755278982137),
                (1e+300, 690.7755278982137),
                (5e-324, -744.4400719213812),
                (1.7976931348623157e+308, 709.782712893384),
                (3.0, 1.0986122886681098),
            ],
        ),
        (
            "ln_1p",
            &[
                (1e-10, 9.999999999500001e-11),
                (-1e-10, -1.00000000005e-10),
                (0.5, 0.4054651081081644),
                (-0.5, -0.6931471805599453),
                (1.0, 0.6931471805599453),
                (10000000000.0, 23.025850930040455),
                (-0.9999999, -16.118095651484676),
                (0.41421356, 0.34657358860194104),
                (3e-20, 3e-20),
                (100.0, 4.61512051684126),
            ],
        ),
        (
            "exp_m1",
            &[
                (1e-10, 1.00000000005e-10),
                (-1e-10, -9.999999999500001e-11),
                (0.3, 0.3498588075760031),
                (-0.3, -0.2591817793182821),
                (0.35, 0.41906754859325723),
                (-0.35, -0.29531191028128656),
                (1.0, 1.7182818284590453),
                (-1.0, -0.6321205588285577),
                (10.0, 22025.465794806718),
                (700.0, 1.0142320547350045e+304),
            ],
        ),
        (
            "tanh",
            &[
                (1e-10, 1e-10),
                (0.1, 0.09966799462495582),
                (0.3, 0.2913126124515909),
                (0.5, 0.46211715726000974),
                (1.0, 0.7615941559557649),
                (2.0, 0.9640275800758169),
                (5.0, 0.9999092042625951),
                (18.0, 0.9999999999999996),
                (-0.7, -0.6043677771171635),
                (-3.0, -0.9950547536867305),
            ],
        ),
        (
            "sin",
            &[
                (0.5, 0.479425538604203),
                (1.0, 0.8414709848078965),
                (3.141592653589793, 1.2246467991473532e-16),
                (6.283185307179586, -2.4492935982947064e-16),
                (100.0, -0.5063656411097588),
                (100000.0, 0.03574879797201651),
                (1000000000.0, 0.5458434494486996),
                (-2.0, -0.9092974268256817),
                (355.0, -3.014435335948845e-05),
                (1e-08, 1e-08),
            ],
        ),
        (
            "cos",
            &[
                (0.5, 0.8775825618903728),
                (1.0, 0.5403023058681398),
                (1.5707963267948966, 6.123233995736766e-17),
                (3.141592653589793, -1.0),
                (100.0, 0.8623188722876839),
                (100000.0, -0.9993608074382124),
                (1000000000.0, 0.8378871813639024),
                (-2.0, -0.4161468365471424),
                (355.0, -0.999999999545659),
                (1e-08, 1.0),
            ],
        ),
        (
            "tan",
            &[
                (0.5, 0.5463024898437905),
                (1.0, 1.5574077246549023),
                (1.5707963267948966, 1.633123935319537e+16),
                (3.0, -0.1425465430742778),
                (100.0, -0.5872139151569291),
                (100000.0, -0.035771662952898776),
                (-2.0, 2.185039863261519),
                (355.0, 3.0144353373184265e-05),
                (1e-08, 1e-08),
                (0.785, 0.9992039901050427),
            ],
        ),
        (
            "erf",
            &[
                (1e-10, 1.1283791670955126e-10),
                (0.1, 0.1124629160182849),
                (0.5, 0.5204998778130465),
                (0.87, 0.7814398454905507),
                (0.88, 0.7866873191739325),
                (1.0, 0.8427007929497149),
                (2.0, 0.9953222650189527),
                (3.0, 0.9999779095030014),
                (4.5, 0.9999999998033839),
                (-1.5, -0.9661051464753108),
            ],
        ),
        (
            "log2",
            &[
                (3.0, 1.584962500721156),
                (0.1, -3.321928094887362),
                (10.0, 3.321928094887362),
                (1.5, 0.5849625007211562),
                (1e+300, 996.5784284662087),
                (1e-310, -1029.7977094150824),
                (0.75, -0.4150374992788438),
                (1.0000001, 1.4426949695965583e-07),
                (7.0, 2.807354922057604),
                (1e-05, -16.609640474436812),
            ],
        ),
        (
            "log10",
            &[
                (3.0, 0.47712125471966244),
                (0.1, -1.0),
                (2.0, 0.3010299956639812),
                (1.5, 0.17609125905568124),
                (1e+300, 300.0),
                (1e-310, -310.0),
                (0.75, -0.12493873660829995),
                (1.0000001, 4.3429446044209946e-08),
                (7.0, 0.8450980400142568),
                (1e-05, -5.0),
            ],
        ),
    ];
    for (name, table) in tables {
        let (f, max): (fn(f64) -> f64, u64) = match name {
            "exp" => (exp_f64, 1),
            "ln" => (ln_f64, 1),
            "ln_1p" => (ln_1p_f64, 1),
            "exp_m1" => (exp_m1_f64, 2),
            "tanh" => (tanh_f64, 2),
            "sin" => (sin_f64, 1),
            "cos" => (cos_f64, 1),
            "tan" => (tan_f64, 2),
            "erf" => (erf_f64, 1),
            "log2" => (log2_f64, 1),
            "log10" => (log10_f64, 1),
            _ => unreachable!(),
        };
        for &(x, want) in table {
            let got = f(x);
            assert!(
                ulps(got, want) <= max,
                "{name}({x:e}) = {got:e}, want {want:e}"
            );
        }
    }
}

/// A function's name, the function, and (x, f(x)) pairs.
type Case<'a> = (&'a str, fn(f64) -> f64, &'a [(f64, f64)]);

#[test]
fn special_values() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    // (function, [(x, result)])
    let cases: [Case<'_>; 14] = [
        (
            "exp",
            exp_f64,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, 0.0),
                (0.0, 1.0),
                (-0.0, 1.0),
                (710.0, inf),
                (-746.0, 0.0),
            ],
        ),
        (
            "exp_m1",
            exp_m1_f64,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, -1.0),
                (0.0, 0.0),
                (-0.0, -0.0),
                (710.0, inf),
                (-50.0, -1.0),
                (5e-324, 5e-324),
            ],
        ),
        (
            "ln",
            ln_f64,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, nan),
                (0.0, -inf),
                (-0.0, -inf),
                (1.0, 0.0),
                (-1.0, nan),
                (-5e-324, nan),
            ],
        ),
        (
            "ln_1p",
            ln_1p_f64,
            &[
                (nan, nan),
                (inf, inf),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
                (-1.0, -inf),
                (-2.0, nan),
                (5e-324, 5e-324),
            ],
        ),
        (
            "log2",
            log2_f64,
            &[
                (nan, nan),
                (inf, inf),
                (0.0, -inf),
                (-1.0, nan),
                (1.0, 0.0),
                (5e-324, -1074.0),
            ],
        ),
        (
            "log10",
            log10_f64,
            &[
                (nan, nan),
                (inf, inf),
                (0.0, -inf),
                (-1.0, nan),
                (1.0, 0.0),
                (10.0, 1.0),
                (1000.0, 3.0),
            ],
        ),
        (
            "tanh",
            tanh_f64,
            &[
                (nan, nan),
                (inf, 1.0),
                (-inf, -1.0),
                (0.0, 0.0),
                (-0.0, -0.0),
                (5e-324, 5e-324),
            ],
        ),
        (
            "sigmoid",
            sigmoid_f64,
            &[(nan, nan), (inf, 1.0), (-inf, 0.0), (0.0, 0.5)],
        ),
        ("silu", silu_f64, &[(nan, nan), (inf, inf), (0.0, 0.0)]),
        (
            "erf",
            erf_f64,
            &[
                (nan, nan),
                (inf, 1.0),
                (-inf, -1.0),
                (0.0, 0.0),
                (-0.0, -0.0),
                (6.5, 1.0),
                (-5e-324, -5e-324),
            ],
        ),
        (
            "gelu",
            gelu_f64,
            &[(nan, nan), (inf, inf), (-inf, nan), (0.0, 0.0)],
        ),
        (
            "sin",
            sin_f64,
            &[
                (nan, nan),
                (inf, nan),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
                (5e-324, 5e-324),
            ],
        ),
        (
            "cos",
            cos_f64,
            &[(nan, nan), (inf, nan), (-inf, nan), (0.0, 1.0), (-0.0, 1.0)],
        ),
        (
            "tan",
            tan_f64,
            &[
                (nan, nan),
                (inf, nan),
                (-inf, nan),
                (0.0, 0.0),
                (-0.0, -0.0),
            ],
        ),
    ];
    for (name, f, table) in cases {
        for &(x, want) in table {
            assert!(
                same(f(x), want),
                "{name}({x:e}) = {:e}, want {want:e}",
                f(x)
            );
        }
    }
    for f in [sin_f64_reduced, cos_f64_reduced, tan_f64_reduced] {
        assert!(f(nan).is_nan() && f(inf).is_nan());
    }
}

#[test]
fn every_path_gives_identical_bits() {
    let mut rng = Rng(7);
    let mut src: Vec<f64> = (0..10_007).map(|_| rng.uniform(-40.0, 40.0)).collect();
    src.extend((0..3000).map(|_| f64::from_bits(rng.next())));
    src.extend([
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        -f64::INFINITY,
        5e-324,
        1e9,
        3e9,
    ]);
    crate::kernels::unary::vmath::testing::every_kernel_paths_agree!(f64, &src);
}

#[test]
fn patched_kernels_match_the_checked_functions() {
    let mut rng = Rng(11);
    let mut src: Vec<f64> = (0..5000).map(|_| rng.uniform(-100.0, 100.0)).collect();
    // a few huge values, one block of none
    for i in [3, 1500, 1501, 4999] {
        src[i] = 1e300 / (i as f64);
    }
    src[2000] = -3e12;
    fn check<K: Unary<f64>>(src: &[f64], f: fn(f64) -> f64) {
        let want: Vec<_> = src.iter().map(|&x| f(x).to_bits()).collect();
        let mut dst = vec![0.0; src.len()];
        K::map(src, &mut dst);
        let mut buf = src.to_vec();
        K::apply(&mut buf);
        assert_eq!(dst.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        assert_eq!(buf.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
    }
    check::<vmath::Sin>(&src, sin_f64);
    check::<vmath::Cos>(&src, cos_f64);
    check::<vmath::Tan>(&src, tan_f64);
}

/// Writes `x f(x)` lines for `tools/vmath_check.py`, which measures the
/// errors against mpmath: `VMATH_DUMP=/tmp cargo test --release --lib
/// dump_for_mpmath -- --ignored`, then `python tools/vmath_check.py /tmp`.
#[test]
#[ignore]
fn dump_for_mpmath() {
    use std::io::Write;
    let dir = std::env::var("VMATH_DUMP").unwrap_or_else(|_| "/tmp".into());
    let fs: [Case<'_>; 15] = [
        ("exp", exp_f64, &[(-745.0, 709.0)]),
        ("expm1", exp_m1_f64, &[(-3.0, 3.0)]),
        ("ln", ln_f64, &[(0.0, 3.0)]),
        ("ln1p", ln_1p_f64, &[(-0.9, 3.0)]),
        ("log2", log2_f64, &[(0.0, 3.0)]),
        ("log10", log10_f64, &[(0.0, 3.0)]),
        ("tanh", tanh_f64, &[(-3.0, 3.0)]),
        ("sigmoid", sigmoid_f64, &[(-40.0, 40.0)]),
        ("silu", silu_f64, &[(-40.0, 40.0)]),
        ("erf", erf_f64, &[(-6.0, 6.0)]),
        ("sin", sin_f64, &[(-10.0, 10.0)]),
        ("cos", cos_f64, &[(-10.0, 10.0)]),
        ("tan", tan_f64, &[(-10.0, 10.0)]),
        ("sin_big", sin_f64, &[(-1e9, 1e9)]),
        ("cos_big", cos_f64, &[(-1e9, 1e9)]),
    ];
    let n: usize = std::env::var("VMATH_DUMP_N").map_or(20_000, |v| v.parse().unwrap());
    let mut rng = Rng(99);
    for (name, f, range) in fs {
        let (lo, hi) = range[0];
        let path = format!("{dir}/vmath_{name}.txt");
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        for _ in 0..n {
            let x = rng.uniform(lo, hi);
            writeln!(out, "{x:?} {:?}", f(x)).unwrap();
        }
    }
}
