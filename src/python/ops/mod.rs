//! Op bindings: one file per `src/ops` file of the same name.

pub(crate) mod activation;
pub(crate) mod addmm;
pub(crate) mod arith;
pub(crate) mod combine;
pub(crate) mod compare;
pub(crate) mod conv;
pub(crate) mod copy;
pub(crate) mod decomp;
pub(crate) mod index;
pub(crate) mod join;
pub(crate) mod linalg;
pub(crate) mod loss;
pub(crate) mod normalization;
pub(crate) mod pointwise;
pub(crate) mod random_fill;
pub(crate) mod reduce;
pub(crate) mod rounding;
pub(crate) mod shape;
pub(crate) mod sort;
pub(crate) mod special;
pub(crate) mod table;
pub(crate) mod ternary;
pub(crate) mod trig;
pub(crate) mod unary;
pub(crate) mod view;
