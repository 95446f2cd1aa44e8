//! PyO3 bindings (feature "python"): the `ferrograd._C` extension module.
//!
//! The folders show the layers; a binding file imports only `core/` and the
//! Rust layers below (`tests/layers.rs` checks it):
//! - `core/`: the Tensor class, argument converters (`args.rs`), errors
//!   mapped both ways, object identity, dtypes and devices, NumPy interop;
//! - `autograd/`: custom Functions, hooks, graph nodes, the engine entry
//!   points, anomaly mode, the profiler and forward AD;
//! - `ops/`: one file per `src/ops` file of the same name, adding
//!   `#[pymethods]` blocks to the Tensor class and module functions;
//! - `create/`: factories and conversion from Python data;
//! - `nn/`, `optim.rs`: what `ferrograd.nn` and `ferrograd.optim` call.

// Bindings take torch's arguments, however many a signature has.
#![allow(clippy::too_many_arguments)]

mod autograd;
mod core;
mod create;
mod nn;
mod ops;
mod optim;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_C")]
fn ferrograd_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<core::tensor::PyTensor>()?;
    // torch._C._nn: what nn.functional calls; the op files add to it.
    m.add_submodule(&PyModule::new(m.py(), "_nn")?)?;
    // The order of the original single list (a later name replaces an
    // earlier one).
    core::dtype::register(m)?;
    core::batched::register(m)?;
    autograd::node::register(m)?;
    autograd::hooks::register(m)?;
    autograd::engine::register(m)?;
    autograd::anomaly::register(m)?;
    autograd::profiler::register(m)?;
    create::register(m)?;
    core::numpy::register(m)?;
    core::dlpack::register(m)?;
    core::storage_io::register(m)?;
    core::safetensors_io::register(m)?;
    autograd::function::register(m)?;
    autograd::forward_ad::register(m)?;
    autograd::graph::register(m)?;
    create::memory::register(m)?;
    ops::index::register(m)?;
    ops::join::register(m)?;
    ops::linalg::register(m)?;
    ops::unary::register(m)?;
    ops::arith::register(m)?;
    ops::pointwise::register(m)?;
    ops::reduce::register(m)?;
    ops::compare::register(m)?;
    ops::view::register(m)?;
    ops::rounding::register(m)?;
    ops::trig::register(m)?;
    ops::special::register(m)?;
    ops::special_more::register(m)?;
    ops::ternary::register(m)?;
    ops::shape::register(m)?;
    ops::loss::register(m)?;
    ops::sort::register(m)?;
    ops::addmm::register(m)?;
    ops::random_fill::register(m)?;
    optim::register(m)?;
    ops::copy::register(m)?;
    nn::init::register(m)?;
    nn::utils::register(m)?;
    ops::activation::register(m)?;
    ops::normalization::register(m)?;
    ops::combine::register(m)?;
    ops::decomp::register(m)?;
    ops::decomp_more::register(m)?;
    ops::conv::register(m)?;
    core::repr::register(m)?;
    ops::table::register(m)?;
    Ok(())
}
