//! Scalar math the standard library lacks.

use super::unary::vmath;
use crate::buffer::Float;

/// erf for the float element types (the scalar form of the `erf` kernel).
pub trait Erf: Float {
    fn erf(self) -> Self;
}
impl Erf for f32 {
    fn erf(self) -> f32 {
        erf_f32(self)
    }
}
impl Erf for f64 {
    fn erf(self) -> f64 {
        erf_f64(self)
    }
}

/// erf: the branch-free [`vmath::erf_f64`] (within 1 ulp), so a scalar call
/// gives the same bits as the vectorised `erf` op.
pub fn erf_f64(x: f64) -> f64 {
    vmath::erf_f64(x)
}

/// erf for float32: [`vmath::erf_f32`].
pub fn erf_f32(x: f32) -> f32 {
    vmath::erf_f32(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_matches_known_values() {
        let cases = [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (5.0, 0.999_999_999_998_462_5),
            (-1.0, -0.842_700_792_949_714_9),
        ];
        for (x, want) in cases {
            assert!((super::erf_f64(x) - want).abs() < 1e-14, "erf({x})");
        }
    }
}
