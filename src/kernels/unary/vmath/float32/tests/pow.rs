//! Accuracy, special values and bitwise path agreement of the float32
//! pow, against float64 libm's pow rounded to float32.

use super::*;

/// xorshift64*: a reproducible stream.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }
    fn bits32(&mut self) -> f32 {
        f32::from_bits((self.next() >> 32) as u32)
    }
}

fn reference(x: f32, y: f32) -> f32 {
    (x as f64).powf(y as f64) as f32
}

fn check_pow(name: &str, pairs: impl Iterator<Item = (f32, f32)>, max: u32) {
    let mut w = (0, 0.0f32, 0.0f32);
    for (x, y) in pairs {
        let u = ulps(pow_f32(x, y), reference(x, y));
        if u > w.0 {
            w = (u, x, y);
        }
    }
    let (u, x, y) = w;
    eprintln!("pow f32 {name}: max {u} ulps against float64 (at {x:e} ** {y:e})");
    assert!(
        u <= max,
        "pow f32 {name}: {u} ulps at {x:e} ** {y:e} (got {:e}, want {:e})",
        pow_f32(x, y),
        reference(x, y)
    );
}

const N: usize = 1 << 21;

#[test]
fn pow_is_accurate() {
    let mut rng = Rng(0x005e_ed0f_9077);
    check_pow("bits", (0..N).map(|_| (rng.bits32(), rng.bits32())), 1);
    let mut rng = Rng(3);
    check_pow(
        "x in (0, 4), y in (-40, 40)",
        (0..N).map(|_| {
            (
                rng.uniform(0.0, 4.0) as f32,
                rng.uniform(-40.0, 40.0) as f32,
            )
        }),
        1,
    );
    // |y ln x| up to 110 over every binade of x, subnormals included:
    // results from overflow through the subnormals to underflow
    let mut rng = Rng(5);
    check_pow(
        "x in 2^[-149, 128), |y ln x| < 110",
        (0..N).map(|_| {
            let x = (rng.uniform(-149.0, 128.0).exp2() * rng.uniform(1.0, 2.0)) as f32;
            let x = if x == 0.0 { 1e-45 } else { x.min(f32::MAX) };
            (x, (rng.uniform(-110.0, 110.0) / (x as f64).ln()) as f32)
        }),
        1,
    );
    let mut rng = Rng(7);
    check_pow(
        "x in 1 +- 2^-7, |y ln x| < 110",
        (0..N).map(|_| {
            let x = (1.0 + rng.uniform(-1.0, 1.0) / 128.0) as f32;
            (x, (rng.uniform(-110.0, 110.0) / (x as f64).ln()) as f32)
        }),
        1,
    );
    let mut rng = Rng(13);
    check_pow(
        "x in (-30, 0), integer y in [-40, 40]",
        (0..N / 4).map(|_| {
            (
                rng.uniform(-30.0, 0.0) as f32,
                rng.uniform(-40.0, 40.0).round() as f32,
            )
        }),
        1,
    );
}

#[test]
fn pow_special_values() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let base = [
        0.0,
        inf,
        nan,
        1.0,
        0.5,
        2.0,
        3.0,
        2.5,
        0.1,
        1e30,
        1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        16_777_216.0, // 2^24
        8_388_609.0,  // 2^23 + 1, odd
        16_777_215.0, // odd
        16_777_218.0,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        127.0,
        128.0,
        149.0,
        150.0,
    ];
    let vals: Vec<f32> = base.iter().flat_map(|&v| [v, -v]).collect();
    for &x in &vals {
        for &y in &vals {
            let (got, want) = (pow_f32(x, y), x.powf(y));
            if want.is_nan() || got.is_nan() {
                assert!(
                    got.is_nan() && want.is_nan(),
                    "pow({x:e}, {y:e}) = {got:e}, want {want:e}"
                );
            } else if want == 0.0 || want.is_infinite() || want.abs() == 1.0 {
                assert_eq!(got.to_bits(), want.to_bits(), "pow({x:e}, {y:e}) = {got:e}");
            } else {
                assert!(
                    ulps(got, reference(x, y)) <= 1,
                    "pow({x:e}, {y:e}) = {got:e}, want {want:e}"
                );
            }
        }
    }
}

#[test]
fn pow_paths_give_identical_bits() {
    use crate::kernels::simd::{force_simd_path, simd_paths};
    use crate::kernels::unary::vmath::testing::Bits;
    let mut rng = Rng(17);
    let mut a: Vec<f32> = (0..4001).map(|_| rng.uniform(0.0, 5.0) as f32).collect();
    let mut b: Vec<f32> = (0..4001).map(|_| rng.uniform(-60.0, 60.0) as f32).collect();
    a.extend((0..2000).map(|_| rng.bits32()));
    b.extend((0..2000).map(|_| rng.bits32()));
    a.extend((0..2000).map(|_| rng.uniform(-4.0, 4.0) as f32));
    b.extend((0..2000).map(|_| rng.uniform(-9.0, 9.0).round() as f32));
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e-45,
        3.0,
        0.5,
    ];
    for &x in &specials {
        for &y in &specials {
            a.push(x);
            b.push(y);
        }
    }
    let want: Vec<u64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| pow_f32(x, y).bits())
        .collect();
    for p in simd_paths() {
        force_simd_path(Some(p));
        let mut dst = vec![0.0; a.len()];
        <vmath::Pow as vmath::Binary<f32>>::zip(&a, &b, &mut dst);
        force_simd_path(None);
        let got: Vec<u64> = dst.iter().map(|&v| v.bits()).collect();
        assert!(got == want, "pow: {p:?} differs from scalar");
    }
}
