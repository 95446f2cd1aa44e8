//! Inverse trigonometric and hyperbolic functions (the table of
//! `crate::ops::trig`, with NumPy's `arc*` aliases as torch has), angle
//! conversion, atan2 and hypot.

use crate::ops::trig::{trig_binary_ops, trig_ops};
use crate::python::core::bind::{bind_binary_ops, bind_unary, bind_unary_float_ops};

trig_ops!(bind_unary_float_ops);

bind_unary! { angle_fns, register_angles:
    /// Degrees to radians.
    deg2rad, deg2rad_ => deg2rad, deg2rad_;
    /// Radians to degrees.
    rad2deg, rad2deg_ => rad2deg, rad2deg_;
}

trig_binary_ops!(bind_binary_ops);

pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    register_table(m)?;
    register_angles(m)?;
    register_binary_table(m)
}
