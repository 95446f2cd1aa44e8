//! Unary pointwise ops from Python: the table of `crate::ops::unary`, and
//! the ops written out there (their dtypes do not fit the table).

use crate::ops::unary::unary_ops;
use crate::python::core::bind::{bind_unary, bind_unary_float_ops};

unary_ops!(bind_unary_float_ops);

bind_unary! { written_fns, register_written:
    /// The absolute value of each element.
    abs, abs_ => abs, abs_;
    /// Alias of `abs`.
    absolute, absolute_ => abs, abs_;
    /// The sign of each element: -1, 0 or 1.
    sign, sign_ => sign, sign_;
    /// `sign` for real tensors.
    sgn, sgn_ => sgn, sgn_;
    /// max(x, 0).
    relu, relu_ => relu, relu_;
    /// x * x.
    square, square_ => square, square_;
    /// -x.
    neg, neg_ => neg, neg_;
    /// Alias of `neg`.
    negative, negative_ => neg, neg_;
}

pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    register_table(m)?;
    register_written(m)
}
