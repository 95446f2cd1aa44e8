//! The Rust custom-Function API (`ferrograd::autograd::custom`), no Python.

use ferrograd::autograd::custom::{delayed_error, Function, FunctionCtx};
use ferrograd::autograd::{self, no_grad};
use ferrograd::{ErrorKind, Result, Tensor};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

mod common;
use common::{assert_close, central_diff, grad1, leaf1, t1};
fn g(x: &Option<Tensor>) -> &Tensor {
    x.as_ref().unwrap()
}

/// y = x * x with a hand-written derivative.
struct Square;
impl Function for Square {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].mul(&inputs[0])?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()?[0];
        Ok(vec![Some(g(&grads[0]).mul(x)?.mul_scalar(2.0)?)])
    }
}

#[test]
fn forward_backward_and_node_name() {
    let x = leaf1(&[1.0, 2.0, 3.0]);
    let y = Square.apply(&[&x]).unwrap().remove(0);
    assert_eq!(y.to_f64_vec(), vec![1.0, 4.0, 9.0]);
    let node = y.grad_fn().unwrap();
    assert_eq!(node.name(), "SquareBackward");
    assert_eq!(node.next_edges().len(), 1);
    y.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![2.0, 4.0, 6.0]);
}

#[test]
fn no_history_without_grad_mode_or_grad_inputs() {
    let x = leaf1(&[1.0]);
    let y = {
        let _g = no_grad();
        Square.apply(&[&x]).unwrap().remove(0)
    };
    assert!(!y.requires_grad());
    let y = Square.apply(&[&t1(&[1.0])]).unwrap().remove(0);
    assert!(!y.requires_grad());
}

/// out = a * b * k; records what it saw.
struct MulK {
    k: f64,
    seen: Arc<Mutex<Vec<Vec<bool>>>>,
}
impl Function for MulK {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("ScaledMul")
    }
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        assert!(!autograd::is_grad_enabled());
        self.seen.lock().unwrap().push(ctx.needs_input_grads());
        ctx.save_for_backward(&[&inputs[0], &inputs[1]]);
        Ok(vec![inputs[0].mul(&inputs[1])?.mul_scalar(self.k)?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        self.seen.lock().unwrap().push(ctx.needs_input_grads());
        let s = ctx.saved_tensors()?;
        let go = g(&grads[0]).mul_scalar(self.k)?;
        Ok(vec![
            ctx.needs_input_grad(0).then(|| go.mul(&s[1])).transpose()?,
            ctx.needs_input_grad(1).then(|| go.mul(&s[0])).transpose()?,
        ])
    }
}

#[test]
fn needs_input_grad_and_custom_name() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a = leaf1(&[1.0, 2.0]);
    let b = t1(&[3.0, 4.0]);
    let f = MulK {
        k: 2.0,
        seen: seen.clone(),
    };
    let y = f.apply(&[&a, &b]).unwrap().remove(0);
    assert_eq!(y.grad_fn().unwrap().name(), "ScaledMul");
    assert!(y.grad_fn().unwrap().next_edges()[1].is_none());
    y.sum().unwrap().backward().unwrap();
    assert_eq!(a.grad().unwrap().to_f64_vec(), vec![6.0, 8.0]);
    assert_eq!(*seen.lock().unwrap(), vec![vec![true, false]; 2]);
}

/// Returns too few gradients.
struct Broken;
impl Function for Broken {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].add(&inputs[1])?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![grads[0].clone()])
    }
}

#[test]
fn wrong_number_of_gradients() {
    let (a, b) = (leaf1(&[1.0]), leaf1(&[2.0]));
    let y = Broken.apply(&[&a, &b]).unwrap().remove(0);
    let err = y.sum().unwrap().backward().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Runtime);
    assert_eq!(
        err.msg,
        "function BrokenBackward returned an incorrect number of gradients (expected 2, got 1)"
    );
}

/// Two outputs; the second is non-differentiable.
struct TwoOut {
    materialize: bool,
    got: Arc<Mutex<Vec<Option<Tensor>>>>,
}
impl Function for TwoOut {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.set_materialize_grads(self.materialize);
        let a = inputs[0].mul_scalar(2.0)?;
        let b = inputs[0].mul_scalar(3.0)?;
        ctx.mark_non_differentiable(&[&b]);
        Ok(vec![a, b])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        *self.got.lock().unwrap() = grads.clone();
        Ok(vec![Some(g(&grads[0]).mul_scalar(2.0)?), None, None])
    }
}

#[test]
fn mark_non_differentiable_and_materialize_grads() {
    for materialize in [true, false] {
        let got = Arc::new(Mutex::new(Vec::new()));
        let x = leaf1(&[1.0, 1.0]);
        let f = TwoOut {
            materialize,
            got: got.clone(),
        };
        let outs = f.apply(&[&x]).unwrap();
        assert!(outs[0].requires_grad());
        assert!(!outs[1].requires_grad() && outs[1].grad_fn().is_none());
        outs[0].sum().unwrap().backward().unwrap(); // extra trailing Nones are fine
        let got = got.lock().unwrap();
        assert_eq!(g(&got[0]).to_f64_vec(), vec![1.0, 1.0]);
        match materialize {
            true => assert_eq!(g(&got[1]).to_f64_vec(), vec![0.0, 0.0]),
            false => assert!(got[1].is_none()),
        }
        assert_eq!(x.grad().unwrap().to_f64_vec(), vec![2.0, 2.0]);
    }
}

/// Doubles its input in place.
struct DoubleInPlace;
impl Function for DoubleInPlace {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        inputs[0].mul_(&t1(&[2.0]))?;
        ctx.mark_dirty(&[&inputs[0]]);
        Ok(vec![inputs[0].clone()])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(g(&grads[0]).mul_scalar(2.0)?)])
    }
}

#[test]
fn mark_dirty_rebases_history() {
    let x = leaf1(&[1.0, -2.0]);
    let a = x.mul_scalar(1.0).unwrap();
    let v0 = a.version();
    let r = DoubleInPlace.apply(&[&a]).unwrap().remove(0);
    assert!(r.same(&a));
    assert_eq!(a.version(), v0 + 2);
    assert_eq!(a.to_f64_vec(), vec![2.0, -4.0]);
    assert_eq!(a.grad_fn().unwrap().name(), "DoubleInPlaceBackward");
    a.mul(&a).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![8.0, -16.0]);

    let err = DoubleInPlace.apply(&[&x]).unwrap_err();
    assert_eq!(
        err.msg,
        "a leaf Variable that requires grad has been used in an in-place operation."
    );
}

#[test]
fn mark_dirty_on_a_view() {
    let x = leaf1(&[1.0, 2.0, 3.0, 4.0]);
    let base = x.mul_scalar(1.0).unwrap();
    let view = base.narrow(0, 1, 2).unwrap();
    DoubleInPlace.apply(&[&view]).unwrap();
    assert_eq!(base.to_f64_vec(), vec![1.0, 4.0, 6.0, 4.0]);
    assert_eq!(base.grad_fn().unwrap().name(), "CopySlices");
    base.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![1.0, 2.0, 2.0, 1.0]);
}

/// Keeps a handle on its ctx so the test can look at it after backward.
struct Spy(Arc<Mutex<Option<FunctionCtx>>>);
impl Function for Spy {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        *self.0.lock().unwrap() = Some(ctx.clone());
        let y = inputs[0].mul_scalar(3.0)?;
        ctx.save_for_backward(&[&inputs[0], &y]);
        Ok(vec![y])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let s = ctx.saved_tensors()?;
        assert!(s[1].grad_fn().is_some(), "a saved output carries its node");
        Ok(vec![Some(g(&grads[0]).mul_scalar(3.0)?)])
    }
}

#[test]
fn saved_tensors_freed_unless_retained() {
    let slot = Arc::new(Mutex::new(None));
    let x = leaf1(&[1.0]);
    let y = Spy(slot.clone()).apply(&[&x]).unwrap().remove(0);
    let ctx = slot.lock().unwrap().clone().unwrap();
    autograd::backward(std::slice::from_ref(&y), &[None], Some(true), false, None).unwrap();
    assert_eq!(ctx.saved_tensors().unwrap().len(), 2);
    y.backward().unwrap();
    assert!(ctx.is_released());
    let err = ctx.saved_tensors().unwrap_err();
    assert!(err
        .msg
        .starts_with("Trying to backward through the graph a second time"));
    assert_eq!(x.grad().unwrap().to_f64_vec(), vec![6.0]);
    assert!(y.backward().is_err());
}

#[test]
fn saved_output_makes_no_cycle() {
    let slot = Arc::new(Mutex::new(None));
    let x = leaf1(&[1.0]);
    let y = Spy(slot.clone()).apply(&[&x]).unwrap().remove(0);
    let node = Arc::downgrade(&y.grad_fn().unwrap());
    drop(y);
    assert!(node.upgrade().is_none());
    assert!(slot.lock().unwrap().as_ref().unwrap().node().is_none());
}

#[test]
fn saved_input_version_check() {
    let x = leaf1(&[1.0, 2.0]);
    let a = x.mul_scalar(1.0).unwrap();
    let y = Square.apply(&[&a]).unwrap().remove(0);
    a.add_(&t1(&[1.0])).unwrap();
    let err = y.sum().unwrap().backward().unwrap_err();
    assert!(
        err.msg.starts_with(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [2]], which is output 0 of Add, is at version 1; expected version 0 instead."
        ),
        "{}",
        err.msg
    );
}

#[test]
fn double_backward_through_custom_backward() {
    let x = leaf1(&[1.0, 3.0]);
    let y = Square.apply(&[&x]).unwrap().remove(0);
    let y = Square.apply(&[&y]).unwrap().remove(0); // x^4
    let gx = grad1(&y.sum().unwrap(), &x, true);
    assert_eq!(gx.to_f64_vec(), vec![4.0, 108.0]);
    let ggx = grad1(&gx.sum().unwrap(), &x, false);
    assert_eq!(ggx.to_f64_vec(), vec![12.0, 108.0]);
}

/// Fails in backward with a value error.
struct Fails;
impl Function for Fails {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].mul_scalar(1.0)?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        _grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Err(ferrograd::Error::value("custom failure"))
    }
}

#[test]
fn backward_error_propagates() {
    let x = leaf1(&[1.0]);
    let err = Fails.apply(&[&x]).unwrap()[0]
        .sum()
        .unwrap()
        .backward()
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Value);
    assert_eq!(err.msg, "custom failure");
}

#[test]
fn delayed_error_raises_on_backward() {
    let x = leaf1(&[1.0, 2.0]);
    let out = delayed_error(
        "no second derivative",
        &[Some(x.mul_scalar(2.0).unwrap()), None],
    );
    assert!(out[1].is_none());
    let y = out[0].clone().unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "torch::autograd::Error");
    assert_eq!(y.to_f64_vec(), vec![2.0, 4.0]);
    let err = y.sum().unwrap().backward().unwrap_err();
    assert_eq!(err.msg, "no second derivative");
}

#[test]
fn numeric_gradient_check() {
    // d/dx sum(x^2 * x^2) through two custom nodes vs central differences.
    let xs = [0.3, -1.7, 2.2];
    let x = leaf1(&xs);
    let f = |x: &Tensor| -> f64 {
        let y = Square.apply(&[x]).unwrap().remove(0);
        Square.apply(&[&y]).unwrap()[0].sum().unwrap().to_f64_vec()[0]
    };
    let y = Square.apply(&[&x]).unwrap().remove(0);
    Square.apply(&[&y]).unwrap()[0]
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let grad = x.grad().unwrap().to_f64_vec();
    let num = central_diff(&[xs.to_vec()], |v| f(&t1(&v[0])));
    assert_close(&num[0], &grad, 1e-6, "numeric vs analytic gradient");
}

// ----- the Functions above under `autograd::gradcheck` -----

mod checked {
    use super::*;
    use ferrograd::autograd::gradcheck::{
        gradcheck, gradcheck_with, gradgradcheck, gradgradcheck_with, GradcheckFailure,
        GradcheckOptions,
    };
    use ferrograd::ErrorKind;

    type F = fn(&[Tensor]) -> Result<Vec<Tensor>>;

    /// gradcheck and gradgradcheck, slow and fast mode.
    fn check_all(f: F, inputs: &[Tensor]) {
        let fast = GradcheckOptions {
            fast_mode: true,
            ..Default::default()
        };
        for opts in [GradcheckOptions::default(), fast] {
            gradcheck_with(f, inputs, &opts).unwrap_or_else(|e| panic!("gradcheck: {e}"));
            gradgradcheck_with(f, inputs, None, &opts)
                .unwrap_or_else(|e| panic!("gradgradcheck: {e}"));
        }
    }

    fn mulk(k: f64) -> MulK {
        MulK {
            k,
            seen: Arc::default(),
        }
    }

    #[test]
    fn square() {
        check_all(|x| Square.apply(&[&x[0]]), &[common::rand_leaf(&[2, 3], 1)]);
        // Twice over, as in numeric_gradient_check.
        check_all(
            |x| {
                let y = Square.apply(&[&x[0]])?.remove(0);
                Square.apply(&[&y])
            },
            &[leaf1(&[0.3, -1.7, 2.2])],
        );
    }

    #[test]
    fn scaled_mul_with_one_or_both_inputs_requiring_grad() {
        let (a, b) = (common::rand_leaf(&[3], 2), common::rand_leaf(&[3], 3));
        let f: F = |x| mulk(2.5).apply(&[&x[0], &x[1]]);
        check_all(f, &[a.clone(), b.clone()]);
        check_all(f, &[a.clone(), b.detach()]);
        check_all(f, &[a.detach(), b.clone()]);
        // A wrong constant in backward only: the Jacobian check names the
        // first input.
        struct WrongK(MulK);
        impl Function for WrongK {
            fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
                self.0.forward(ctx, inputs)
            }
            fn backward(
                &self,
                ctx: &FunctionCtx,
                grads: Vec<Option<Tensor>>,
            ) -> Result<Vec<Option<Tensor>>> {
                let mut g = self.0.backward(ctx, grads)?;
                g[0] = g[0].as_ref().map(|g| g.mul_scalar(1.01)).transpose()?;
                Ok(g)
            }
        }
        let e = gradcheck(|x| WrongK(mulk(2.5)).apply(&[&x[0], &x[1]]), &[a, b]).unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::JacobianMismatch);
        assert_eq!((e.output, e.input), (Some(0), Some(0)), "{e}");
        assert_eq!(e.entries.len(), 3, "{e}");
    }

    #[test]
    fn two_outputs_one_non_differentiable() {
        let x = [common::rand_leaf(&[2, 2], 4)];
        let materialized: F = |x| {
            TwoOut {
                materialize: true,
                got: Arc::default(),
            }
            .apply(&[&x[0]])
        };
        check_all(materialized, &x);
        // Without materialized gradients TwoOut's backward unwraps a missing
        // output gradient: the undefined-gradient check catches it.
        let lazy: F = |x| {
            TwoOut {
                materialize: false,
                got: Arc::default(),
            }
            .apply(&[&x[0]])
        };
        let e = gradcheck(lazy, &x).unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::UndefinedGrad, "{e}");
        let opts = GradcheckOptions {
            check_undefined_grad: false,
            ..Default::default()
        };
        gradcheck_with(lazy, &x, &opts).unwrap();
    }

    #[test]
    fn in_place_with_mark_dirty() {
        // On a copy of the input (a leaf cannot be modified in place), and on
        // a view of one.
        check_all(
            |x| DoubleInPlace.apply(&[&x[0].mul_scalar(1.0)?]),
            &[leaf1(&[1.0, -2.0, 0.5])],
        );
        check_all(
            |x| {
                let base = x[0].mul_scalar(1.0)?;
                DoubleInPlace.apply(&[&base.narrow(0, 1, 2)?])?;
                Ok(vec![base])
            },
            &[leaf1(&[1.0, 2.0, 3.0, 4.0])],
        );
    }

    #[test]
    fn saved_output() {
        check_all(
            |x| Spy(Arc::default()).apply(&[&x[0]]),
            &[common::rand_leaf(&[3], 5)],
        );
    }

    #[test]
    fn broken_and_failing_backwards_are_reported() {
        let e = gradcheck(
            |x| Broken.apply(&[&x[0], &x[1]]),
            &[leaf1(&[1.0]), leaf1(&[2.0])],
        )
        .unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::Raised);
        assert_eq!(
            e.msg,
            "function BrokenBackward returned an incorrect number of gradients (expected 2, got 1)"
        );
        let e = gradcheck(|x| Fails.apply(&[&x[0]]), &[leaf1(&[1.0])]).unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::Raised);
        assert_eq!(e.source.unwrap().kind, ErrorKind::Value);
    }

    #[test]
    fn second_derivative_of_a_detached_backward_is_caught() {
        // Square's backward with the saved input detached: gradcheck passes,
        // gradgradcheck does not.
        struct SquareDetached;
        impl Function for SquareDetached {
            fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
                Square.forward(ctx, inputs)
            }
            fn backward(
                &self,
                ctx: &FunctionCtx,
                grads: Vec<Option<Tensor>>,
            ) -> Result<Vec<Option<Tensor>>> {
                let x = ctx.saved_tensors()?[0].detach();
                Ok(vec![Some(g(&grads[0]).mul(&x)?.mul_scalar(2.0)?)])
            }
        }
        let f: F = |x| SquareDetached.apply(&[&x[0]]);
        let x = [leaf1(&[0.5, 1.5])];
        gradcheck(f, &x).unwrap();
        let e = gradgradcheck(f, &x, None).unwrap_err();
        assert_eq!(e.failure, GradcheckFailure::JacobianMismatch, "{e}");
    }
}
