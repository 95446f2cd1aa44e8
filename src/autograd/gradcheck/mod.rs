//! A gradient checker for Rust code (torch's `autograd.gradcheck` and
//! `gradgradcheck`): the Jacobians the autograd engine gives, compared with
//! float64 central differences.
//!
//! [`gradcheck`] runs `f` on `inputs` and, for every input that requires grad
//! and every output that requires grad, compares the analytical Jacobian
//! (`autograd::grad` with one-hot upstream gradients, run twice to check that
//! backward is reentrant, i.e. gives the same values each time) with the
//! numerical one (`(f(x + eps e_k) - f(x - eps e_k)) / (2 eps)` for each
//! element `k`). With [`GradcheckOptions::fast_mode`] it compares the
//! projections `v^T J u` for random unit vectors `u` and `v` instead (one
//! backward and one pair of evaluations per input/output pair, torch's fast
//! mode), and recomputes the full Jacobians only to describe a failure. Then,
//! as torch, it checks that backward multiplies by the output gradient (zero
//! upstream gradients give zero input gradients, of each input's shape and
//! dtype) and that backward copes with undefined output gradients.
//! [`gradgradcheck`] runs `gradcheck` on `f`'s vector-Jacobian product, built
//! with `create_graph`, which checks double backward.
//!
//! A failure is a [`GradcheckError`] naming what failed, the input and output
//! (positions in `inputs` and in `f`'s returned vector) and, for a Jacobian
//! mismatch, the entries that differ.
//!
//! ```
//! use ferrograd::autograd::custom::{Function, FunctionCtx};
//! use ferrograd::autograd::gradcheck::{gradcheck, gradgradcheck, GradcheckFailure};
//! use ferrograd::{Result, Tensor};
//!
//! /// y = x^3, with a hand-written derivative (written in ferrograd ops, so
//! /// it is differentiable again).
//! struct Cube { wrong: bool }
//! impl Function for Cube {
//!     fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
//!         ctx.save_for_backward(&[&inputs[0]]);
//!         Ok(vec![inputs[0].mul(&inputs[0])?.mul(&inputs[0])?])
//!     }
//!     fn backward(&self, ctx: &FunctionCtx, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
//!         let x = &ctx.saved_tensors()?[0];
//!         let k = if self.wrong { 2.0 } else { 3.0 };
//!         Ok(vec![Some(grads[0].as_ref().unwrap().mul(&x.mul(x)?)?.mul_scalar(k)?)])
//!     }
//! }
//!
//! // Check in float64, on inputs that require grad.
//! let x = Tensor::from_vec(vec![0.5f64, -1.5, 2.0], &[3]).unwrap().requires_grad_(true).unwrap();
//! let cube = |xs: &[Tensor]| Cube { wrong: false }.apply(&[&xs[0]]);
//! gradcheck(cube, &[x.clone()]).unwrap();
//! gradgradcheck(cube, &[x.clone()], None).unwrap();
//!
//! let err = gradcheck(|xs: &[Tensor]| Cube { wrong: true }.apply(&[&xs[0]]), &[x]).unwrap_err();
//! assert_eq!(err.failure, GradcheckFailure::JacobianMismatch);
//! assert_eq!((err.output, err.input), (Some(0), Some(0)));
//! assert_eq!(err.entries.len(), 3); // the three diagonal entries
//! assert!(err.msg.starts_with("Jacobian mismatch for output 0 with respect to input 0"));
//! ```
//!
//! Inputs should be float64 (float32 ones are checked as they are, with
//! float32 rounding in the finite differences). Perturbed inputs are fresh
//! contiguous copies, so `f` must compute from the tensors it is given. Only
//! reverse mode is checked (torch's `check_backward_ad`); there is no
//! `check_forward_ad` here, and no batched-gradient checks.

use super::custom::{Function, FunctionCtx};
use super::grad_mode::{enable_grad, no_grad};
use crate::tensor::{DType, Tensor};
use crate::{Error, Result};
use std::fmt;

/// Tolerances and switches of [`gradcheck_with`] / [`gradgradcheck_with`];
/// the defaults are torch's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradcheckOptions {
    /// Finite-difference step (default 1e-6).
    pub eps: f64,
    /// Absolute tolerance (default 1e-5).
    pub atol: f64,
    /// Relative tolerance (default 1e-3): entries agree when
    /// `|analytical - numerical| <= atol + rtol * |numerical|`.
    pub rtol: f64,
    /// How far two backward runs with the same upstream gradient may differ
    /// (default 0: backward must be deterministic).
    pub nondet_tol: f64,
    /// Compare random projections `v^T J u` instead of whole Jacobians
    /// (default false).
    pub fast_mode: bool,
    /// Check that backward copes with undefined output gradients (default
    /// true).
    pub check_undefined_grad: bool,
    /// Fail when an input's gradient has another dtype than the input
    /// (default false; a wrong shape always fails).
    pub check_grad_dtypes: bool,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            nondet_tol: 0.0,
            fast_mode: false,
            check_undefined_grad: true,
            check_grad_dtypes: false,
        }
    }
}

/// What a gradient check found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GradcheckFailure {
    /// No input requires grad, or one that does has a stride-0 dimension
    /// (finite differences need distinct elements).
    InvalidInputs,
    /// `f`'s outputs changed number, shape or dtype when an input was
    /// perturbed.
    InconsistentOutputs,
    /// The analytical and numerical Jacobians differ.
    JacobianMismatch,
    /// Two backward runs with the same upstream gradient gave different
    /// values (beyond `nondet_tol`).
    NotReentrant,
    /// An input's gradient does not have the input's shape.
    IncorrectSize,
    /// An input's gradient does not have the input's dtype
    /// (`check_grad_dtypes`).
    DtypeMismatch,
    /// Zero output gradients gave a non-zero input gradient.
    NotMultipliedByGradOutput,
    /// Backward failed on, or gave non-zero gradients for, undefined output
    /// gradients.
    UndefinedGrad,
    /// No output requires grad, yet the numerical gradient is not zero.
    NonzeroNumericalGradient,
    /// `f` or the autograd engine returned an error (see
    /// [`GradcheckError::source`]).
    Raised,
}

/// One Jacobian entry that differs: d output\[`output_element`\] / d
/// input\[`input_element`\] (flat, row-major element indices).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch {
    pub input_element: usize,
    pub output_element: usize,
    pub numerical: f64,
    pub analytical: f64,
}

/// A failed gradient check (torch's `GradcheckError`).
#[derive(Debug, Clone)]
pub struct GradcheckError {
    pub failure: GradcheckFailure,
    /// The input concerned: its position in the `inputs` slice.
    pub input: Option<usize>,
    /// The output concerned: its position in the vector `f` returns.
    pub output: Option<usize>,
    /// For a Jacobian mismatch: every differing entry (in fast mode, those of
    /// the full Jacobians recomputed for the failing pair).
    pub entries: Vec<Mismatch>,
    /// The whole explanation (what `Display` shows).
    pub msg: String,
    /// The error `f` or the engine returned, for [`GradcheckFailure::Raised`]
    /// (and for [`GradcheckFailure::UndefinedGrad`] when backward failed).
    pub source: Option<Box<Error>>,
}

impl GradcheckError {
    fn new(failure: GradcheckFailure, msg: impl Into<String>) -> Self {
        GradcheckError {
            failure,
            input: None,
            output: None,
            entries: Vec::new(),
            msg: msg.into(),
            source: None,
        }
    }
    fn at(mut self, input: Option<usize>, output: Option<usize>) -> Self {
        self.input = input;
        self.output = output;
        self
    }
}

impl fmt::Display for GradcheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for GradcheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| &**e as &(dyn std::error::Error + 'static))
    }
}

impl From<Error> for GradcheckError {
    fn from(e: Error) -> Self {
        let mut g = GradcheckError::new(GradcheckFailure::Raised, e.msg.clone());
        g.source = Some(Box::new(e));
        g
    }
}

impl From<GradcheckError> for Error {
    /// A runtime error (torch's `GradcheckError` is a `RuntimeError`), or
    /// the original error for [`GradcheckFailure::Raised`].
    fn from(e: GradcheckError) -> Self {
        match e.source {
            Some(src) => *src,
            None => Error::runtime(e.msg),
        }
    }
}

type CheckResult<T> = std::result::Result<T, GradcheckError>;

/// [`gradcheck_with`] with the default options.
pub fn gradcheck<F>(f: F, inputs: &[Tensor]) -> CheckResult<()>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    gradcheck_with(f, inputs, &GradcheckOptions::default())
}

/// Checks the gradients of `f` at `inputs` against finite differences, for
/// the inputs that require grad and the outputs that require grad (see the
/// module docs). `Ok(())` when every check passes.
pub fn gradcheck_with<F>(f: F, inputs: &[Tensor], opts: &GradcheckOptions) -> CheckResult<()>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let _grad = enable_grad();
    let checker = Checker::new(&f, inputs, *opts)?;
    if opts.fast_mode {
        checker.fast()?;
    } else {
        checker.slow()?;
    }
    checker.mul_by_grad_output()?;
    if opts.check_undefined_grad {
        checker.undefined_grad()?;
    }
    Ok(())
}

/// [`gradgradcheck_with`] with the default options.
pub fn gradgradcheck<F>(f: F, inputs: &[Tensor], grad_outputs: Option<&[Tensor]>) -> CheckResult<()>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    gradgradcheck_with(f, inputs, grad_outputs, &GradcheckOptions::default())
}

/// Checks second derivatives: runs [`gradcheck_with`] on
/// `(inputs, grad_outputs) -> autograd::grad(f(inputs), inputs, grad_outputs,
/// create_graph)`, the gradients of the inputs that require grad (those that
/// get none left out). `grad_outputs` has one tensor per output of `f` that
/// requires grad; when `None`, they are drawn uniform in [-1, 1) from a
/// fixed seed (the global RNG is left alone), and require grad.
pub fn gradgradcheck_with<F>(
    f: F,
    inputs: &[Tensor],
    grad_outputs: Option<&[Tensor]>,
    opts: &GradcheckOptions,
) -> CheckResult<()>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let _grad = enable_grad();
    if !inputs.iter().any(Tensor::requires_grad) {
        return Err(GradcheckError::new(
            GradcheckFailure::InvalidInputs,
            NO_INPUT_REQUIRES_GRAD,
        ));
    }
    let grad_outputs: Vec<Tensor> = match grad_outputs {
        Some(g) => g.to_vec(),
        None => {
            let outs = f(inputs)?;
            let mut rng = Lcg::new(0x5eed_9a4d_0c7e_3f11);
            outs.iter()
                .filter(|o| o.requires_grad())
                .map(|o| {
                    let vals: Vec<f64> = (0..o.numel()).map(|_| 2.0 * rng.next() - 1.0).collect();
                    let dtype = if o.dtype().is_floating() {
                        o.dtype()
                    } else {
                        DType::F64
                    };
                    tensor_from(vals, o.shape(), dtype, true)
                })
                .collect::<Result<_>>()?
        }
    };
    let n_in = inputs.len();
    let diff_in: Vec<bool> = inputs.iter().map(Tensor::requires_grad).collect();
    let vjp = |args: &[Tensor]| -> Result<Vec<Tensor>> {
        let (xs, gos) = args.split_at(n_in);
        let outs: Vec<Tensor> = f(xs)?.into_iter().filter(|o| o.requires_grad()).collect();
        let wrt: Vec<Tensor> = xs
            .iter()
            .zip(&diff_in)
            .filter(|(_, &d)| d)
            .map(|(x, _)| x.clone())
            .collect();
        let gos: Vec<Option<Tensor>> = gos.iter().cloned().map(Some).collect();
        let grads = super::grad(&outs, &wrt, &gos, None, true, true, false)?;
        Ok(grads.into_iter().flatten().collect())
    };
    let all: Vec<Tensor> = inputs.iter().cloned().chain(grad_outputs).collect();
    gradcheck_with(vjp, &all, opts)
}

mod checker;
use checker::{tensor_from, Checker, Lcg, NO_INPUT_REQUIRES_GRAD};
