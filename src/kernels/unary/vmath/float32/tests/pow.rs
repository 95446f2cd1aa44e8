//! Accuracy, special values and bitwise path agreement of the float32
//! pow, against float64 libm's pow rounded to float32.

use super::*;
use crate::kernels::unary::vmath::test_support::{
    pow_grid, pow_paths_agree, Rng, POW_BASES, SPECIALS,
};

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
    let more = [
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
    let base: Vec<f32> = POW_BASES.iter().map(|&v| v as f32).chain(more).collect();
    pow_grid(&base, pow_f32, f32::powf, |x, y, got, _| {
        ulps(got, reference(x, y)) <= 1
    });
}

#[test]
fn pow_paths_give_identical_bits() {
    let mut rng = Rng(17);
    let mut a: Vec<f32> = (0..4001).map(|_| rng.uniform(0.0, 5.0) as f32).collect();
    let mut b: Vec<f32> = (0..4001).map(|_| rng.uniform(-60.0, 60.0) as f32).collect();
    a.extend((0..2000).map(|_| rng.bits32()));
    b.extend((0..2000).map(|_| rng.bits32()));
    a.extend((0..2000).map(|_| rng.uniform(-4.0, 4.0) as f32));
    b.extend((0..2000).map(|_| rng.uniform(-9.0, 9.0).round() as f32));
    let specials: Vec<f32> = SPECIALS
        .iter()
        .map(|&v| v as f32)
        .chain([1e-45, 3.0, 0.5])
        .collect();
    pow_paths_agree(a, b, &specials, pow_f32);
}
