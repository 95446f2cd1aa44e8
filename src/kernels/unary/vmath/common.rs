//! The functions whose algorithm is the same at both widths, written once.
//!
//! `width_common!(f32, u32, ...)` in `float32.rs` (and `(f64, u64, ...)` in
//! `float64.rs`, each with its width's constants) expands to the items the
//! two files held by hand: `sinh_f32`, `atan2_f64`, ... (the name gets the
//! width's suffix). The bodies call that module's own primitives by name
//! (`exp_f32`, `ln_1p_f64`, `exp_reduce`, `pow2`, ...) and read its tables
//! (`PIO2_1..3`, `SIN_S`, `COS_C`, `ERF_Q`, `ERFC_E`, `EXPM1_Q`,
//! `TRIG_LIMIT_F32`/`_F64`), so each width keeps its own polynomials and
//! thresholds; the expressions, and so the results bit for bit, are those of
//! the hand-written bodies they replace.

macro_rules! width_common {
    ($t:ident, $u:ident, magic = $magic:literal, sinh_big = $sinh_big:literal,
     erf_clamp = $erf_clamp:literal, erfc_mid = $erfc_mid:literal) => {
        paste::paste! {
            /// 1.5 * 2^(mantissa bits): adding it rounds a value below half of that
            /// to an integer, which then sits in the low bits of the sum's bit pattern.
            const MAGIC: $t = $magic;
            /// Above this |x|, e^|x| - 1 overflows and sinh takes `h - 1 / (4h)`.
            const SINH_BIG: $t = $sinh_big;
            /// erf rounds to ±1 beyond this |x|.
            const ERF_CLAMP: $t = $erf_clamp;
            /// The centre of the fit ERFC_E.
            const ERFC_MID: $t = $erfc_mid;

            /// NaN below 0 (and for NaN), -inf at ±0, +inf at +inf, else `r`: the
            /// special results shared by the logarithms.
            #[inline(always)]
            fn log_specials(x: $t, r: $t) -> $t {
                select(
                    x.is_nan() || x < 0.0,
                    $t::NAN,
                    select(x == 0.0, $t::NEG_INFINITY, select(x == $t::INFINITY, x, r)),
                )
            }
            #[inline(always)]
            fn select(c: bool, a: $t, b: $t) -> $t {
                if c {
                    a
                } else {
                    b
                }
            }

            /// `|r|` with the sign of `s` (NaN stays NaN).
            #[inline(always)]
            fn with_sign_of(r: $t, s: $t) -> $t {
                const SIGN: $u = 1 << ($u::BITS - 1);
                $t::from_bits((r.to_bits() & !SIGN) | (s.to_bits() & SIGN))
            }

            /// `c[0] + c[1] x + ...`: pairs `c[2i] + c[2i+1] x`, combined by Horner's
            /// rule in `x^2`.
            #[inline(always)]
            fn poly<const N: usize>(x: $t, c: &[$t; N]) -> $t {
                let x2 = x * x;
                let mut i = N;
                let mut acc = if N % 2 == 1 {
                    i -= 1;
                    c[N - 1]
                } else {
                    i -= 2;
                    c[N - 1].mul_add(x, c[N - 2])
                };
                while i >= 2 {
                    acc = acc.mul_add(x2, c[i - 1].mul_add(x, c[i - 2]));
                    i -= 2;
                }
                acc
            }

            /// e^r - 1 for |r| <= 0.3466: `r + r^2 (1/2 + r Q(r))`.
            #[inline(always)]
            fn expm1_poly(r: $t) -> $t {
                let h = r.mul_add(poly(r, &EXPM1_Q), 0.5);
                (r * r).mul_add(h, r)
            }

            /// e^x in the normal range below 0 (one scale, no clamping).
            #[inline(always)]
            fn exp_normal(x: $t) -> $t {
                let (r, n) = exp_reduce(x);
                let s = pow2(n);
                expm1_poly(r).mul_add(s, s)
            }

            /// `1 / (1 + e^-x)`.
            #[inline(always)]
            pub fn [<sigmoid_ $t>](x: $t) -> $t {
                1.0 / (1.0 + [<exp_ $t>](-x))
            }

            /// `x / (1 + e^-x)`.
            #[inline(always)]
            pub fn [<silu_ $t>](x: $t) -> $t {
                x / (1.0 + [<exp_ $t>](-x))
            }

            /// log(sigmoid(x)) = `min(x, 0) - ln(1 + e^-|x|)` (ATen's formula).
            #[inline(always)]
            pub fn [<log_sigmoid_ $t>](x: $t) -> $t {
                // NaN: 0 - NaN
                select(x < 0.0, x, 0.0) - [<ln_1p_ $t>]([<exp_ $t>](-x.abs()))
            }

            /// d silu / dx = s (1 + x (1 - s)), s = sigmoid(x).
            #[inline(always)]
            pub fn [<silu_grad_ $t>](x: $t) -> $t {
                let s = [<sigmoid_ $t>](x);
                s * (1.0 + x * (1.0 - s))
            }

            const K_BETA: $t =
                (std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5) as $t;
            const K_KAPPA: $t = 0.044_715;

            /// gelu's tanh approximation `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
            #[inline(always)]
            pub fn [<gelu_tanh_ $t>](x: $t) -> $t {
                let inner = K_BETA * (x + K_KAPPA * x * x * x);
                0.5 * x * (1.0 + [<tanh_ $t>](inner))
            }

            /// The derivative of the tanh approximation of gelu.
            #[inline(always)]
            pub fn [<gelu_tanh_grad_ $t>](x: $t) -> $t {
                let x_sq = x * x;
                let inner = K_BETA * (x + K_KAPPA * x_sq * x);
                let t = [<tanh_ $t>](inner);
                let left = 0.5 * x;
                let right = 1.0 + t;
                let left_d = 0.5 * right;
                let right_d = left * (1.0 - t * t) * K_BETA * (1.0 + 3.0 * K_KAPPA * x_sq);
                left_d + right_d
            }

            /// gelu `x Φ(x) = x/2 (1 + erf(x / √2))`.
            #[inline(always)]
            pub fn [<gelu_ $t>](x: $t) -> $t {
                x * 0.5 * (1.0 + [<gelu_erf_ $t>](x * FRAC_1_SQRT_2))
            }

            /// d gelu / dx = Φ(x) + x φ(x).
            #[inline(always)]
            pub fn [<gelu_grad_ $t>](x: $t) -> $t {
                const K_ALPHA: $t = (std::f64::consts::FRAC_2_SQRT_PI
                    * std::f64::consts::FRAC_1_SQRT_2
                    * 0.5) as $t;
                let cdf = 0.5 * (1.0 + [<gelu_erf_ $t>](x * FRAC_1_SQRT_2));
                let pdf = [<exp_ $t>](-0.5 * x * x) * K_ALPHA;
                cdf + x * pdf
            }

            /// The error function: `x P(x^2)` for |x| < 0.875, else
            /// `±(1 - e^-x^2 E(|x|))` with |x| clamped to `ERF_CLAMP` (where erf rounds
            /// to ±1) and E centred on `ERFC_MID`.
            #[inline(always)]
            pub fn [<erf_ $t>](x: $t) -> $t {
                let ax = x.abs();
                // x c0 + x z Q(z) with one rounding of the leading term
                let z = x * x;
                let c0 = std::$t::consts::FRAC_2_SQRT_PI;
                let small = c0.mul_add(x, (x * z) * poly(z, &ERF_Q));
                let small = select(x == 0.0, x, small); // keeps -0.0
                // NaN fails the test and stays NaN.
                let xb = select(ax > ERF_CLAMP, ERF_CLAMP, ax);
                let e = exp_normal(-(xb * xb));
                let big = (-e).mul_add(poly(xb - ERFC_MID, &ERFC_E), 1.0);
                select(ax < 0.875, small, with_sign_of(big, x))
            }

            // ----- sin, cos, tan -----

            /// `x = n pi/2 + r` with |r| <= pi/4 (plus rounding): (sin r, cos r, n's
            /// low bits).
            #[inline(always)]
            fn sincos_reduced(x: $t) -> ($t, $t, $u) {
                let t = x.mul_add(FRAC_2_PI, MAGIC);
                let n = t - MAGIC;
                let r = (-n).mul_add(PIO2_1, x);
                let r = (-n).mul_add(PIO2_2, r);
                let r = (-n).mul_add(PIO2_3, r);
                let z = r * r;
                let s = (r * z).mul_add(poly(z, &SIN_S), r);
                // cos r = w + (the rounding error of w + r^4 C), w = 1 - r^2/2 rounded
                let hr = -0.5 * r;
                let w = hr.mul_add(r, 1.0);
                let e = hr.mul_add(r, 1.0 - w);
                let c = w + (z * z).mul_add(poly(z, &COS_C), e);
                (s, c, t.to_bits())
            }

            /// `v` negated where bit 1 of `q` is set.
            #[inline(always)]
            fn negate_if_bit1(v: $t, q: $u) -> $t {
                $t::from_bits(v.to_bits() ^ ((q & 2) << ($u::BITS - 2)))
            }

            /// sin(x) for |x| up to the width's `TRIG_LIMIT` (and NaN, ±inf: NaN);
            /// branch-free.
            #[inline(always)]
            pub fn [<sin_ $t _reduced>](x: $t) -> $t {
                let (s, c, q) = sincos_reduced(x);
                let v = negate_if_bit1(select(q & 1 == 1, c, s), q);
                // keeps -0.0
                select(x == 0.0, x, v)
            }

            /// cos(x) for |x| up to the width's `TRIG_LIMIT`; branch-free.
            #[inline(always)]
            pub fn [<cos_ $t _reduced>](x: $t) -> $t {
                let (s, c, q) = sincos_reduced(x);
                negate_if_bit1(select(q & 1 == 1, s, c), q.wrapping_add(1))
            }

            /// tan(x) for |x| up to the width's `TRIG_LIMIT`: `sin r / cos r`, or
            /// `-cos r / sin r` for odd n; branch-free.
            #[inline(always)]
            pub fn [<tan_ $t _reduced>](x: $t) -> $t {
                let (s, c, q) = sincos_reduced(x);
                let odd = q & 1 == 1;
                let v = select(odd, c, s) / select(odd, -s, c);
                select(x == 0.0, x, v)
            }

            /// Whether |x| is beyond the fast reduction (NaN is not).
            #[inline(always)]
            pub fn [<trig_slow_ $t>](x: $t) -> bool {
                x.abs() > [<TRIG_LIMIT_ $t:upper>]
            }

            trig_every_x!($t: sin, cos, tan);

            // ----- sinh, cosh, softplus -----

            /// `(t / 2) t` with `t = e^(|x|/2)`: e^|x| / 2, finite until the result
            /// overflows.
            #[inline(always)]
            fn half_exp_abs(ax: $t) -> $t {
                let t = [<exp_ $t>](0.5 * ax);
                (0.5 * t) * t
            }

            /// sinh x: `(u + u / (u + 1)) / 2` with `u = e^|x| - 1` (no
            /// cancellation near 0; two positive terms), and where u overflows (|x|
            /// above `SINH_BIG`) `h - 1 / (4h)` with `h = e^|x| / 2`; x's sign goes on.
            #[inline(always)]
            pub fn [<sinh_ $t>](x: $t) -> $t {
                let ax = x.abs();
                let u = [<exp_m1_ $t>](ax);
                let small = 0.5 * (u + u / (u + 1.0));
                let h = half_exp_abs(ax);
                let big = h - 0.25 / h;
                // NaN fails the test and stays NaN (big is NaN too).
                with_sign_of(select(ax < SINH_BIG, small, big), x)
            }

            /// cosh x: `h + 1 / (4h)` with `h = e^|x| / 2`.
            #[inline(always)]
            pub fn [<cosh_ $t>](x: $t) -> $t {
                let h = half_exp_abs(x.abs());
                h + 0.25 / h
            }

            /// softplus `log(1 + e^(βx)) / β`, or x where `βx > threshold` (torch's
            /// formula, on the vectorised exp and log1p).
            #[inline(always)]
            pub fn [<softplus_ $t>](x: $t, beta: $t, threshold: $t) -> $t {
                let bx = x * beta;
                select(bx > threshold, x, [<ln_1p_ $t>]([<exp_ $t>](bx)) / beta)
            }

            /// d softplus / dx: `z / (z + 1)` with `z = e^(βx)`, or 1 where
            /// `βx > threshold` (torch's formula).
            #[inline(always)]
            pub fn [<softplus_grad_ $t>](x: $t, beta: $t, threshold: $t) -> $t {
                let bx = x * beta;
                let z = [<exp_ $t>](bx);
                select(bx > threshold, 1.0, z / (z + 1.0))
            }

            // ----- logaddexp, atan2, hypot -----

            /// `log(e^a + e^b)` as `max + log1p(e^-|a - b|)` (ATen's formula; equal
            /// infinities give themselves).
            #[inline(always)]
            pub fn [<logaddexp_ $t>](a: $t, b: $t) -> $t {
                let m = a.max(b);
                let r = m + [<ln_1p_ $t>]([<exp_ $t>](-(a - b).abs()));
                select(a.is_infinite() && a == b, a, r)
            }

            /// `log2(2^a + 2^b)` as `max + log1p(2^-|a - b|) / ln 2`.
            #[inline(always)]
            pub fn [<logaddexp2_ $t>](a: $t, b: $t) -> $t {
                let m = a.max(b);
                let r = m + [<ln_1p_ $t>]([<exp2_ $t>](-(a - b).abs())) * LOG2_E;
                select(a.is_infinite() && a == b, a, r)
            }

            /// atan2(y, x): atan of `min(|x|, |y|) / max(|x|, |y|)` (0 for two zeros,
            /// 1 for two infinities), reflected into the right octant, y's sign put
            /// back; x's sign bit picks the left half plane (so -0 does).
            #[inline(always)]
            pub fn [<atan2_ $t>](y: $t, x: $t) -> $t {
                use std::$t::consts::{FRAC_PI_2, PI};
                let (ax, ay) = (x.abs(), y.abs());
                let swap = ay > ax;
                let (num, den) = (select(swap, ax, ay), select(swap, ay, ax));
                let t = select(den == 0.0, 0.0, select(num == $t::INFINITY, 1.0, num / den));
                let a = [<atan_ $t>](t);
                let a = select(swap, FRAC_PI_2 - a, a);
                let a = select(x.is_sign_negative(), PI - a, a);
                // NaN in either: the comparisons fail or t is NaN, and so is a
                let a = select(x.is_nan() || y.is_nan(), $t::NAN, a);
                with_sign_of(a, y)
            }

            /// hypot(a, b) = `m sqrt(1 + (n/m)^2)` with m, n the larger and smaller of
            /// |a|, |b| (no overflow or underflow of the squares); 0 for two zeros, inf
            /// where either is infinite (even beside a NaN, as C's).
            #[inline(always)]
            pub fn [<hypot_ $t>](a: $t, b: $t) -> $t {
                let (aa, ab) = (a.abs(), b.abs());
                let (m, n) = (aa.max(ab), aa.min(ab));
                let r = n / m;
                let h = m * r.mul_add(r, 1.0).sqrt();
                let h = select(m == 0.0, 0.0, h);
                let h = select(a.is_nan() || b.is_nan(), $t::NAN, h);
                select(aa == $t::INFINITY || ab == $t::INFINITY, $t::INFINITY, h)
            }
        }
    };
}

/// `sin_f32(x)`, `cos_f32`, `tan_f32` (and the f64 ones) for every x: the
/// branch-free reduced form up to the width's `TRIG_LIMIT`, libm in float64
/// beyond; a branch, so for single elements: slices take [`super::Sin`].
macro_rules! trig_every_x {
    ($t:ident: $($f:ident),*) => {
        paste::paste! {
            $(
                #[doc = concat!(stringify!($f), "(x) for every x (libm in float64 beyond the width's `TRIG_LIMIT`).")]
                #[inline(always)]
                pub fn [<$f _ $t>](x: $t) -> $t {
                    if [<trig_slow_ $t>](x) {
                        (x as f64).$f() as $t
                    } else {
                        [<$f _ $t _reduced>](x)
                    }
                }
            )*
        }
    };
}
