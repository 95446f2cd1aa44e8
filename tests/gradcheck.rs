//! `ferrograd::autograd::gradcheck`: the Rust gradient checker passes on
//! correct built-in ops and custom Functions, and fails, saying where, on
//! wrong, non-reentrant or otherwise broken backwards; fast mode agrees.

use ferrograd::autograd::custom::{Function, FunctionCtx};
use ferrograd::autograd::gradcheck::{
    gradcheck, gradcheck_with, gradgradcheck, gradgradcheck_with, GradcheckError, GradcheckFailure,
    GradcheckOptions,
};
use ferrograd::{DType, Result, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};

mod common;
use common::{leaf, leaf1, rand_leaf, t1};

fn fast() -> GradcheckOptions {
    GradcheckOptions {
        fast_mode: true,
        ..Default::default()
    }
}

/// Runs `check` in slow and fast mode and returns both results.
fn both<F>(f: F, inputs: &[Tensor]) -> [std::result::Result<(), GradcheckError>; 2]
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy,
{
    [gradcheck(f, inputs), gradcheck_with(f, inputs, &fast())]
}

fn passes<F>(f: F, inputs: &[Tensor])
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Copy,
{
    for (mode, r) in ["slow", "fast"].iter().zip(both(f, inputs)) {
        if let Err(e) = r {
            panic!("gradcheck ({mode} mode) failed: {e}");
        }
    }
    for (mode, r) in ["slow", "fast"].iter().zip([
        gradgradcheck(f, inputs, None),
        gradgradcheck_with(f, inputs, None, &fast()),
    ]) {
        if let Err(e) = r {
            panic!("gradgradcheck ({mode} mode) failed: {e}");
        }
    }
}

// ----- built-in ops -----

#[test]
fn built_in_ops_pass() {
    let a = rand_leaf(&[3, 4], 1);
    let b = rand_leaf(&[4, 2], 2);
    let c = rand_leaf(&[4], 3);
    passes(|x| Ok(vec![x[0].matmul(&x[1])?]), &[a.clone(), b.clone()]);
    passes(
        |x| Ok(vec![x[0].mul(&x[1])?.exp()?]),
        &[a.clone(), c.clone()],
    ); // broadcasting
    passes(
        |x| Ok(vec![x[0].softmax(1, None)?]),
        std::slice::from_ref(&a),
    );
    passes(|x| Ok(vec![x[0].tanh()?.sum()?]), std::slice::from_ref(&a));
    // Views: transpose, narrow, expand, permute, reshape.
    passes(
        |x| {
            let t = x[0].transpose(0, 1)?.narrow(0, 1, 2)?; // [2, 3]
            Ok(vec![t.mul(&t)?.reshape(&[3, 2])?])
        },
        std::slice::from_ref(&a),
    );
    passes(
        |x| Ok(vec![x[0].expand(&[2, 4])?.permute(&[1, 0])?.mul(&x[1])?]),
        &[c.clone(), b.clone()],
    );
}

#[test]
fn several_outputs_and_an_input_without_grad() {
    let a = rand_leaf(&[2, 3], 4);
    let k = common::rand(&[3], 5); // does not require grad
    let f = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![
            x[0].mul(&x[1])?.sin()?,
            x[0].sum()?,
            x[1].mul_scalar(2.0)?, // requires no grad: not checked
        ])
    };
    passes(f, &[a, k]);
}

#[test]
fn float32_inputs_are_checked_with_float32_rounding() {
    let a = leaf1(&[0.5, -1.0, 2.0]).to_dtype(DType::F32).unwrap();
    let a = a.detach().requires_grad_(true).unwrap();
    let opts = GradcheckOptions {
        eps: 1e-3,
        atol: 1e-2,
        rtol: 1e-2,
        ..Default::default()
    };
    gradcheck_with(|x| Ok(vec![x[0].mul(&x[0])?]), &[a], &opts).unwrap();
}

// ----- custom Functions -----

/// x^3 with a derivative `k x^2` (correct for k = 3).
struct Cube(f64);
impl Function for Cube {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].mul(&inputs[0])?.mul(&inputs[0])?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()?[0];
        let g = grads[0].as_ref().unwrap();
        Ok(vec![Some(g.mul(&x.mul(x)?)?.mul_scalar(self.0)?)])
    }
}

fn cube(x: &[Tensor]) -> Result<Vec<Tensor>> {
    Cube(3.0).apply(&[&x[0]])
}

#[test]
fn correct_custom_function_passes() {
    passes(cube, &[rand_leaf(&[2, 3], 6)]);
}

#[test]
fn wrong_backward_fails_naming_output_input_and_entries() {
    let x = leaf(&[0.5, -1.0, 2.0, 0.25], &[2, 2]);
    let k = t1(&[1.0, 2.0]);
    let wrong = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        let y = x[1].mul(&x[0])?; // input 0 does not require grad
        Ok(vec![y.sum()?, Cube(2.0).apply(&[&y])?.remove(0)])
    };
    for r in both(wrong, &[k, x]) {
        let e = r.unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::JacobianMismatch, "{e}");
        assert_eq!((e.output, e.input), (Some(1), Some(1)), "{e}");
        // Diagonal entries differ (2 y^2 * k instead of 3 y^2 * k), the zero
        // off-diagonal ones agree.
        let mut at: Vec<(usize, usize)> = e
            .entries
            .iter()
            .map(|m| (m.input_element, m.output_element))
            .collect();
        at.sort();
        assert_eq!(at, vec![(0, 0), (1, 1), (2, 2), (3, 3)], "{e}");
        let m = e.entries.iter().find(|m| m.input_element == 3).unwrap();
        // y = 0.5 at [1, 1]: numerical 3 * y^2 * 2 = 1.5, analytical 1.0.
        assert!((m.numerical - 1.5).abs() < 1e-6 && (m.analytical - 1.0).abs() < 1e-12);
        assert!(
            e.msg
                .contains("Jacobian mismatch for output 1 with respect to input 1"),
            "{e}"
        );
        assert!(
            e.msg
                .contains("d output[1][1, 1] / d input[1][1, 1]: numerical"),
            "{e}"
        );
        // Into a crate error: a runtime error with the same message.
        let err: ferrograd::Error = e.clone().into();
        assert_eq!(err.kind, ferrograd::ErrorKind::Runtime);
        assert_eq!(err.msg, e.msg);
    }
}

/// Adds a value that grows with each backward call: not reentrant.
struct Drifting(&'static AtomicU64);
impl Function for Drifting {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) as f64;
        let g = grads[0].as_ref().unwrap();
        Ok(vec![Some(g.mul_scalar(2.0 + 1e-9 * n)?)])
    }
}

#[test]
fn non_reentrant_backward_is_detected() {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let f = |x: &[Tensor]| Drifting(&CALLS).apply(&[&x[0]]);
    let x = rand_leaf(&[3], 7);
    for r in both(f, std::slice::from_ref(&x)) {
        let e = r.unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::NotReentrant, "{e}");
        assert_eq!((e.output, e.input), (Some(0), Some(0)));
        assert!(e.msg.starts_with("Backward is not reentrant"), "{e}");
    }
    // Within a tolerance for nondeterminism it passes.
    let opts = GradcheckOptions {
        nondet_tol: 1e-3,
        ..Default::default()
    };
    gradcheck_with(f, &[x], &opts).unwrap();
}

/// Returns `2 x` whatever the output gradient (right only for a one-hot
/// upstream gradient on a one-element input).
struct IgnoresGrad;
impl Function for IgnoresGrad {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].mul(&inputs[0])?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        _grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(ctx.saved_tensors()?[0].mul_scalar(2.0)?)])
    }
}

#[test]
fn backward_not_multiplied_by_grad_output() {
    let f = |x: &[Tensor]| IgnoresGrad.apply(&[&x[0]]);
    // One element: the Jacobians agree, the zero-gradient check does not.
    let e = gradcheck(f, &[leaf1(&[1.5])]).unwrap_err();
    assert_eq!(
        e.failure,
        GradcheckFailure::NotMultipliedByGradOutput,
        "{e}"
    );
    assert_eq!(e.input, Some(0));
    // More elements: the Jacobian check fails first.
    let e = gradcheck(f, &[leaf1(&[1.5, 2.0])]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::JacobianMismatch, "{e}");
}

/// Gradient with a wrong shape (a sum over the input).
struct WrongShape;
impl Function for WrongShape {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(1.0)?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(grads[0].as_ref().unwrap().sum()?)])
    }
}

#[test]
fn wrong_gradient_shape_fails() {
    let e = gradcheck(
        |x: &[Tensor]| WrongShape.apply(&[&x[0]]),
        &[leaf1(&[1.0, 2.0])],
    )
    .unwrap_err();
    // The engine refuses it (the checker's own size check is for gradients
    // the engine lets through).
    assert_eq!(e.failure, GradcheckFailure::Raised, "{e:?}");
    assert_eq!(e.output, Some(0));
    assert!(
        e.msg
            .contains("WrongShapeBackward returned an invalid gradient at index 0"),
        "{e}"
    );
}

/// Fails when backward gets no materialized gradient.
struct NeedsGrad;
impl Function for NeedsGrad {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.set_materialize_grads(false);
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        match &grads[0] {
            Some(g) => Ok(vec![Some(g.mul_scalar(2.0)?)]),
            None => Err(ferrograd::Error::runtime("no gradient")),
        }
    }
}

#[test]
fn undefined_output_gradients() {
    let f = |x: &[Tensor]| NeedsGrad.apply(&[&x[0]]);
    let x = [leaf1(&[1.0, 2.0])];
    let e = gradcheck(f, &x).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::UndefinedGrad, "{e}");
    let opts = GradcheckOptions {
        check_undefined_grad: false,
        ..Default::default()
    };
    gradcheck_with(f, &x, &opts).unwrap();
}

#[test]
fn invalid_inputs() {
    let e = gradcheck(|x| Ok(vec![x[0].mul_scalar(2.0)?]), &[t1(&[1.0])]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::InvalidInputs);
    assert!(e
        .msg
        .contains("at least one input tensor to require gradient"));
    let e = gradgradcheck(|x| Ok(vec![x[0].mul_scalar(2.0)?]), &[t1(&[1.0])], None);
    assert_eq!(e.unwrap_err().failure, GradcheckFailure::InvalidInputs);

    let expanded = leaf1(&[1.0]).expand(&[3]).unwrap();
    let e = gradcheck(|x| Ok(vec![x[0].mul_scalar(2.0)?]), &[expanded]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::InvalidInputs);
    assert_eq!(e.input, Some(0));
    assert!(e.msg.contains("stride 0"), "{e}");
}

#[test]
fn errors_of_the_function_come_back_as_raised() {
    let e = gradcheck(|x| Ok(vec![x[0].matmul(&x[0])?]), &[rand_leaf(&[2, 3], 8)]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::Raised);
    let src = e.source.clone().unwrap();
    assert_eq!(src.msg, e.msg);
    assert!(std::error::Error::source(&e).is_some());
    let back: ferrograd::Error = e.into();
    assert_eq!(back.kind, src.kind);
}

#[test]
fn outputs_that_change_shape_are_reported() {
    // Keeps the elements above 0.3: the count changes when x[0] = 0.3 moves.
    let f = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        let v: Vec<f64> = x[0].to_f64_vec().into_iter().filter(|&v| v > 0.3).collect();
        let n = v.len();
        Ok(vec![Tensor::from_vec(v, &[n])?.mul(&x[0].sum()?)?])
    };
    let e = gradcheck(f, &[leaf1(&[0.3, 1.0])]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::InconsistentOutputs, "{e}");
    assert_eq!(e.input, Some(0));
}

#[test]
fn no_differentiable_output() {
    let detached = |x: &[Tensor]| Ok(vec![x[0].detach().mul_scalar(2.0)?]);
    let e = gradcheck(detached, &[leaf1(&[1.0, 2.0])]).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::NonzeroNumericalGradient, "{e}");
    let e = gradcheck_with(detached, &[leaf1(&[1.0, 2.0])], &fast()).unwrap_err();
    assert_eq!(e.failure, GradcheckFailure::NonzeroNumericalGradient, "{e}");
    // A constant with no history passes: its numerical gradient is zero.
    gradcheck(|_| Ok(vec![t1(&[1.0, 2.0])]), &[leaf1(&[1.0])]).unwrap();
}

#[test]
fn fast_mode_agrees_with_slow_mode() {
    let x = rand_leaf(&[3, 2], 9);
    let y = rand_leaf(&[2], 10);
    type Case = (&'static str, fn(&[Tensor]) -> Result<Vec<Tensor>>, bool);
    let cases: [Case; 4] = [
        ("mul+exp", |x| Ok(vec![x[0].mul(&x[1])?.exp()?]), true),
        ("cube", |x| Cube(3.0).apply(&[&x[0]]), true),
        ("wrong cube", |x| Cube(2.9).apply(&[&x[0]]), false),
        (
            "wrong second input",
            |x| {
                let w = Cube(2.5).apply(&[&x[1]])?.remove(0);
                Ok(vec![x[0].add(&w)?])
            },
            false,
        ),
    ];
    for (name, f, ok) in cases {
        let [slow, quick] = both(f, &[x.clone(), y.clone()]);
        assert_eq!(slow.is_ok(), ok, "{name} slow: {slow:?}");
        assert_eq!(quick.is_ok(), ok, "{name} fast: {quick:?}");
        if !ok {
            let (s, q) = (slow.unwrap_err(), quick.unwrap_err());
            assert_eq!((s.input, s.output), (q.input, q.output), "{name}");
            assert!(q.msg.contains("(fast mode)"), "{}", q.msg);
            // Fast mode describes the failure with the slow-mode entries.
            assert_eq!(s.entries, q.entries, "{name}");
        }
    }
}

/// x^3 whose backward detaches the saved input: first derivatives right,
/// second derivatives wrong.
struct CubeNoDouble;
impl Function for CubeNoDouble {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].mul(&inputs[0])?.mul(&inputs[0])?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let x = ctx.saved_tensors()?[0].detach();
        let g = grads[0].as_ref().unwrap();
        Ok(vec![Some(g.mul(&x.mul(&x)?)?.mul_scalar(3.0)?)])
    }
}

#[test]
fn gradgradcheck_catches_a_wrong_double_backward() {
    let f = |x: &[Tensor]| CubeNoDouble.apply(&[&x[0]]);
    let x = [rand_leaf(&[3], 11)];
    for r in both(f, &x) {
        r.unwrap();
    }
    for opts in [GradcheckOptions::default(), fast()] {
        let e = gradgradcheck_with(f, &x, None, &opts).unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::JacobianMismatch, "{e}");
        // gradgradcheck's inputs are (x, grad_output): the wrong entries are
        // those of d(grad x)/dx.
        assert_eq!((e.output, e.input), (Some(0), Some(0)), "{e}");
    }
}

#[test]
fn gradgradcheck_with_given_grad_outputs() {
    let x = rand_leaf(&[2, 2], 12);
    let go = rand_leaf(&[2, 2], 13);
    gradgradcheck(cube, std::slice::from_ref(&x), Some(&[go])).unwrap();
    // A grad_output that does not require grad is not checked itself.
    let go = common::rand(&[2, 2], 14);
    gradgradcheck(cube, &[x], Some(&[go])).unwrap();
}

#[test]
fn leaves_the_global_rng_alone() {
    ferrograd::manual_seed(5);
    let a = Tensor::rand(&[4], DType::F64).unwrap().to_f64_vec();
    ferrograd::manual_seed(5);
    gradgradcheck_with(cube, &[rand_leaf(&[3], 15)], None, &fast()).unwrap();
    let b = Tensor::rand(&[4], DType::F64).unwrap().to_f64_vec();
    assert_eq!(a, b);
}
