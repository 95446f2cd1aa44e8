//! Saved-tensor hooks from Rust: pack at save time, unpack in backward,
//! the output's history kept, version checks, save_on_cpu.

use ferrograd::autograd::saved_hooks::{self, FnHooks, Packed, SaveOnCpu};
use ferrograd::Tensor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::{assert_msg, leaf1};

fn counting() -> (
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    Arc<dyn saved_hooks::SavedTensorHooks>,
) {
    let p = Arc::new(AtomicUsize::new(0));
    let u = Arc::new(AtomicUsize::new(0));
    let (p2, u2) = (p.clone(), u.clone());
    let hooks = Arc::new(FnHooks {
        pack: move |t: &Tensor| -> ferrograd::Result<Packed> {
            p2.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(t.detach().clone_tensor()?))
        },
        unpack: move |x: &Packed| -> ferrograd::Result<Tensor> {
            u2.fetch_add(1, Ordering::SeqCst);
            Ok(x.downcast_ref::<Tensor>().unwrap().clone())
        },
    });
    (p, u, hooks)
}

#[test]
fn pack_at_save_unpack_in_backward() {
    let a = leaf1(&[1.0, 2.0]);
    let (p, u, hooks) = counting();
    let y = saved_hooks::with_hooks(hooks, || a.mul(&a)?.exp()?.sum()).unwrap();
    assert_eq!(p.load(Ordering::SeqCst), 3); // self, other, result
    assert_eq!(u.load(Ordering::SeqCst), 0);
    assert!(saved_hooks::current_hooks().is_none());
    y.backward().unwrap();
    assert_eq!(u.load(Ordering::SeqCst), 3);
    let g = a.grad().unwrap().to_f64_vec();
    for (gi, x) in g.iter().zip([1.0f64, 2.0]) {
        assert!((gi - 2.0 * x * (x * x).exp()).abs() < 1e-9);
    }
}

#[test]
fn saved_output_keeps_its_grad_fn() {
    let a = leaf1(&[0.5]);
    let (_, _, hooks) = counting();
    let y = saved_hooks::with_hooks(hooks, || a.exp()).unwrap();
    let f = y.grad_fn().unwrap();
    let r = f.backward().saved("result", &f).unwrap().unwrap();
    assert!(Arc::ptr_eq(&r.grad_fn().unwrap(), &f));
    let s = saved_hooks::with_hooks(counting().2, || a.mul(&a)).unwrap();
    let sf = s.grad_fn().unwrap();
    let x = sf.backward().saved("self", &sf).unwrap().unwrap();
    assert!(x.requires_grad());
}

#[test]
fn version_checked_with_hooks() {
    let a = leaf1(&[1.0, 2.0]).clone_tensor().unwrap();
    let y = saved_hooks::with_hooks(Arc::new(SaveOnCpu), || a.mul(&a)?.sum()).unwrap();
    a.add_(&Tensor::from_vec(vec![1.0f64], &[1]).unwrap())
        .unwrap();
    let e = y.backward().unwrap_err();
    assert_msg(&e, "modified by an inplace operation");
}

#[test]
fn save_on_cpu_copies() {
    let a = leaf1(&[1.0, 2.0]).clone_tensor().unwrap();
    let y = saved_hooks::with_hooks(Arc::new(SaveOnCpu), || a.mul(&a)).unwrap();
    let f = y.grad_fn().unwrap();
    let s = f.backward().saved("self", &f).unwrap().unwrap();
    assert_ne!(s.data_ptr(), a.data_ptr());
    assert_eq!(s.to_f64_vec(), vec![1.0, 2.0]);
}

#[test]
fn disabled_refuses_push() {
    saved_hooks::set_disabled(Some("off".into())).unwrap();
    let e = saved_hooks::push_hooks(Arc::new(SaveOnCpu)).unwrap_err();
    assert_eq!(e.msg, "off");
    saved_hooks::set_disabled(None).unwrap();
    saved_hooks::push_hooks(Arc::new(SaveOnCpu)).unwrap();
    assert!(saved_hooks::set_disabled(Some("x".into())).is_err());
    saved_hooks::pop_hooks();
}
