//! Accuracy, special values and bitwise path agreement of the float64
//! pow, against libm's (std's `powf`, glibc's: within about 0.52 ulp).

use super::*;

/// Largest ulp distance from libm's pow over the pairs, as (ulps, x, y).
fn worst(pairs: impl Iterator<Item = (f64, f64)>) -> (u64, f64, f64) {
    let mut w = (0, 0.0, 0.0);
    for (x, y) in pairs {
        let u = ulps(pow_f64(x, y), x.powf(y));
        if u > w.0 {
            w = (u, x, y);
        }
    }
    w
}

fn check_pow(name: &str, pairs: impl Iterator<Item = (f64, f64)>, max: u64) -> u64 {
    let (u, x, y) = worst(pairs);
    eprintln!("pow {name}: max {u} ulps against libm (at {x:e} ** {y:e})");
    assert!(
        u <= max,
        "pow {name}: {u} ulps at {x:e} ** {y:e} (got {:e}, want {:e})",
        pow_f64(x, y),
        x.powf(y)
    );
    u
}

const N: usize = 1 << 21;

#[test]
fn pow_is_accurate() {
    let mut rng = Rng(0x005e_ed0f_9077);
    // random bit patterns: every magnitude and sign, mostly special results
    check_pow(
        "bits",
        (0..N).map(|_| (f64::from_bits(rng.next()), f64::from_bits(rng.next()))),
        1,
    );
    let mut rng = Rng(3);
    check_pow(
        "x in (0, 4), y in (-40, 40)",
        (0..N).map(|_| (rng.uniform(0.0, 4.0), rng.uniform(-40.0, 40.0))),
        1,
    );
    // |y ln x| up to 745 over every binade of x: results from overflow
    // through the subnormals to underflow
    let mut rng = Rng(5);
    check_pow(
        "x in 2^[-1074, 1024), |y ln x| < 760",
        (0..N).map(|_| {
            let x = rng.uniform(-1074.0, 1024.0).exp2() * rng.uniform(1.0, 2.0);
            (x, rng.uniform(-760.0, 760.0) / x.ln())
        }),
        1,
    );
    // x near 1 and huge |y| (ln x tiny: its relative accuracy counts)
    let mut rng = Rng(7);
    check_pow(
        "x in 1 +- 2^-20, |y ln x| < 745",
        (0..N).map(|_| {
            let x = 1.0 + rng.uniform(-1.0, 1.0) * 2f64.powi(-20);
            (x, rng.uniform(-745.0, 745.0) / x.ln())
        }),
        1,
    );
    let mut rng = Rng(9);
    check_pow(
        "x in 1 +- 2^-7, |y ln x| < 745",
        (0..N).map(|_| {
            let x = 1.0 + rng.uniform(-1.0, 1.0) / 128.0;
            (x, rng.uniform(-745.0, 745.0) / x.ln())
        }),
        1,
    );
    // subnormal x, negative x with integer y (odd and even)
    let mut rng = Rng(11);
    check_pow(
        "subnormal x, y in (-1.1, 1.1)",
        (0..N / 4).map(|_| (f64::from_bits(rng.next() >> 12), rng.uniform(-1.1, 1.1))),
        1,
    );
    let mut rng = Rng(13);
    check_pow(
        "x in (-30, 0), integer y in [-200, 200]",
        (0..N / 4).map(|_| (rng.uniform(-30.0, 0.0), rng.uniform(-200.0, 200.0).round())),
        1,
    );
}

#[test]
fn pow_special_values() {
    let two53 = 9_007_199_254_740_992.0;
    let more = [
        1e300,
        5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        two53,
        two53 / 2.0 + 1.0, // odd, 2^52 + 1
        two53 - 1.0,       // odd
        two53 + 2.0,
        1.0 + f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        1e-10,
        1e10,
        1023.0,
        1024.0,
        1074.0,
        1075.0,
    ];
    let base: Vec<f64> = POW_BASES.into_iter().chain(more).collect();
    pow_grid(&base, pow_f64, f64::powf, |_, _, got, want| {
        ulps(got, want) <= 1
    });
}

#[test]
fn pow_paths_give_identical_bits() {
    let mut rng = Rng(17);
    let mut a: Vec<f64> = (0..4001).map(|_| rng.uniform(0.0, 5.0)).collect();
    let mut b: Vec<f64> = (0..4001).map(|_| rng.uniform(-300.0, 300.0)).collect();
    a.extend((0..2000).map(|_| f64::from_bits(rng.next())));
    b.extend((0..2000).map(|_| f64::from_bits(rng.next())));
    a.extend((0..2000).map(|_| rng.uniform(-4.0, 4.0)));
    b.extend((0..2000).map(|_| rng.uniform(-9.0, 9.0).round()));
    let specials: Vec<f64> = SPECIALS.into_iter().chain([5e-324, 3.0, 0.5]).collect();
    pow_paths_agree(a, b, &specials, pow_f64);
}

/// The staged slice loops of a fixed exponent (out of place, in place)
/// and of a fixed base give `eval`'s bits on every path, both float types.
#[test]
fn pow_with_a_scalar_gives_identical_bits() {
    use crate::kernels::simd::{force_simd_path, simd_paths};
    use crate::kernels::unary::vmath::testing::Bits;
    use vmath::{PowBy, PowOf, UnaryWith};
    fn check<T: Bits + Copy + Default>(xs: &[T], scalars: &[T])
    where
        PowBy<T>: UnaryWith<T>,
        PowOf<T>: UnaryWith<T>,
    {
        for &s in scalars {
            let (by, of) = (PowBy(s), PowOf(s));
            let want_by: Vec<u64> = xs.iter().map(|&x| by.eval(x).bits()).collect();
            let want_of: Vec<u64> = xs.iter().map(|&x| of.eval(x).bits()).collect();
            for p in simd_paths() {
                force_simd_path(Some(p));
                let mut dst = vec![T::default(); xs.len()];
                by.map(xs, &mut dst);
                let mut buf = xs.to_vec();
                by.apply(&mut buf);
                let mut dst_of = vec![T::default(); xs.len()];
                of.map(xs, &mut dst_of);
                force_simd_path(None);
                let bits = |v: &[T]| v.iter().map(|&x| x.bits()).collect::<Vec<_>>();
                assert!(bits(&dst) == want_by, "x^e: {p:?} differs");
                assert!(bits(&buf) == want_by, "x^e in place: {p:?} differs");
                assert!(bits(&dst_of) == want_of, "b^x: {p:?} differs");
            }
        }
    }
    let mut rng = Rng(19);
    let mut xs: Vec<f64> = (0..3001).map(|_| rng.uniform(-5.0, 5.0)).collect();
    xs.extend((0..500).map(|_| f64::from_bits(rng.next())));
    xs.extend(SPECIALS);
    xs.push(3.0);
    let scalars = [2.5, -1.5, 3.0, 0.0, -0.0, f64::NAN, 1e300, -7.0, 0.3];
    check::<f64>(&xs, &scalars);
    let xs32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let s32: Vec<f32> = scalars.iter().map(|&x| x as f32).collect();
    check::<f32>(&xs32, &s32);
}
