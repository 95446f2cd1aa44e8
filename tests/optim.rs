use ferrograd::optim::{Adam, AdamOptions, Sgd, SgdOptions};
use ferrograd::Tensor;

mod common;
use common::leaf1;

/// Two steps of loss = sum(w^2) / 2 (gradient w).
fn two_steps(step: &mut dyn FnMut() -> ferrograd::Result<()>, w: &Tensor) -> Vec<f64> {
    for _ in 0..2 {
        w.set_grad(None).unwrap();
        w.mul(w)
            .unwrap()
            .sum()
            .unwrap()
            .mul_scalar(0.5)
            .unwrap()
            .backward()
            .unwrap();
        step().unwrap();
    }
    w.to_f64_vec()
}

#[test]
fn sgd_with_momentum() {
    let w = leaf1(&[1.0, -2.0]);
    let opts = SgdOptions {
        lr: 0.1,
        momentum: 0.9,
        ..Default::default()
    };
    let mut opt = Sgd::new(vec![w.clone()], opts).unwrap();
    // step 1: buf = w0, w1 = 0.9 w0; step 2: buf = 0.9 w0 + 0.9 w0, w2 = w1 - 0.18 w0
    let got = two_steps(&mut || opt.step(), &w);
    for (g, w0) in got.iter().zip([1.0, -2.0]) {
        assert!((g - 0.72 * w0).abs() < 1e-12, "{got:?}");
    }
    opt.zero_grad().unwrap();
    assert!(w.grad().is_none() && w.is_leaf() && w.requires_grad());
}

#[test]
fn adam_first_steps_move_by_lr() {
    // With a constant-sign gradient, Adam's early steps are about lr each.
    let w = leaf1(&[1.0, -2.0]);
    let opts = AdamOptions {
        lr: 0.01,
        ..Default::default()
    };
    let mut opt = Adam::new(vec![w.clone()], opts).unwrap();
    let got = two_steps(&mut || opt.step(), &w);
    assert!(
        (got[0] - 0.98).abs() < 1e-5 && (got[1] + 1.98).abs() < 1e-5,
        "{got:?}"
    );
    let bad = AdamOptions {
        betas: (1.0, 0.999),
        ..Default::default()
    };
    let err = Adam::new(vec![w], bad).err().unwrap();
    assert!(err
        .to_string()
        .contains("Invalid beta parameter at index 0"));
}

#[test]
fn adamw_decays_the_parameter() {
    // A zero gradient leaves only the decoupled decay: w * (1 - lr * wd).
    let w = leaf1(&[1.0, -2.0]);
    let mut opt = Adam::new(vec![w.clone()], AdamOptions::adamw()).unwrap();
    w.set_grad(Some(Tensor::from_vec(vec![0.0, 0.0], &[2]).unwrap()))
        .unwrap();
    opt.step().unwrap();
    let f = 1.0 - 1e-3 * 1e-2;
    assert_eq!(w.to_f64_vec(), vec![f, -2.0 * f]);
}

#[test]
fn rmsprop_and_adagrad_first_step() {
    use ferrograd::optim::*;
    // First step from zero state with gradient g: RMSprop moves by
    // lr * g / (sqrt(1 - alpha) |g| + eps); Adagrad by lr * sign(g).
    let w = leaf1(&[1.0, -2.0]);
    let g = Tensor::from_vec(vec![0.5, -4.0], &[2]).unwrap();
    let o = RmspropOptions {
        lr: 0.01,
        ..Default::default()
    };
    let s = RmspropState::new(&w, &o);
    rmsprop_update(&w, &g, &s, &o).unwrap();
    let step = |gv: f64| 0.01 * gv / ((0.01f64).sqrt() * gv.abs() + 1e-8);
    let got = w.to_f64_vec();
    assert!((got[0] - (1.0 - step(0.5))).abs() < 1e-12, "{got:?}");
    assert!((got[1] - (-2.0 - step(-4.0))).abs() < 1e-12, "{got:?}");
    let w = leaf1(&[1.0, -2.0]);
    let o = AdagradOptions::default();
    let s = AdagradState::new(&w, &o).unwrap();
    adagrad_update(&w, &g, &s, &o).unwrap();
    let got = w.to_f64_vec();
    assert!(
        (got[0] - 0.99).abs() < 1e-9 && (got[1] + 1.99).abs() < 1e-9,
        "{got:?}"
    );
    assert_eq!(s.step.to_f64_vec(), vec![1.0]);
    assert!(RmspropOptions {
        alpha: -1.0,
        ..Default::default()
    }
    .check()
    .is_err());
}

#[test]
fn lr_schedules_chain_to_their_closed_forms() {
    use ferrograd::optim::{Plateau, Schedule, Tick};
    let run = |s: Schedule, n: i64| {
        let mut lr = s.next_lr(
            Tick {
                epoch: 0,
                step_count: 1,
            },
            1.0,
            1.0,
        );
        let mut out = vec![lr];
        for e in 1..=n {
            lr = s.next_lr(
                Tick {
                    epoch: e,
                    step_count: e + 1,
                },
                lr,
                1.0,
            );
            out.push(lr);
        }
        out
    };
    let step = run(
        Schedule::Step {
            step_size: 2,
            gamma: 0.5,
        },
        5,
    );
    assert_eq!(step, vec![1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
    let cos = run(
        Schedule::CosineAnnealing {
            t_max: 4,
            eta_min: 0.0,
        },
        4,
    );
    for (e, lr) in cos.iter().enumerate() {
        let want = (1.0 + (std::f64::consts::PI * e as f64 / 4.0).cos()) / 2.0;
        assert!((lr - want).abs() < 1e-12, "{cos:?}");
    }
    let lin = run(
        Schedule::Linear {
            start_factor: 0.5,
            end_factor: 1.0,
            total_iters: 2,
        },
        3,
    );
    assert!((lin[1] - 0.75).abs() < 1e-15 && lin[3] == lin[2], "{lin:?}");
    let p = Plateau::new("min", "rel", 0.1, 0.5, 1e-8).unwrap();
    assert!(p.is_better(0.89, 1.0) && !p.is_better(0.95, 1.0));
    assert_eq!(p.reduced(1.0, 0.0), Some(0.5));
    assert_eq!(p.reduced(0.3, 0.3), None);
    assert!(Plateau::new("avg", "rel", 0.1, 0.5, 1e-8).is_err());
    assert!(Schedule::Constant {
        factor: 2.0,
        total_iters: 1
    }
    .check()
    .is_err());
}
