//! The demo's MLP, in Rust with no Python: two spirals, a 2-64-64-2 MLP
//! whose hidden activation is a custom Function (a hand-written ReLU),
//! trained by `ferrograd::optim::Adam` on a cross-entropy loss.
//!
//! Run: `cargo run --release --example mlp`

use ferrograd::autograd::custom::{Function, FunctionCtx};
use ferrograd::autograd::no_grad;
use ferrograd::ops::loss::{self, Reduction};
use ferrograd::optim::{Adam, AdamOptions};
use ferrograd::{manual_seed, DType, Result, Tensor};
use std::time::Instant;

/// max(x, 0) with a hand-written backward.
struct Relu;

impl Function for Relu {
    fn forward(&mut self, ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(&[&inputs[0]]);
        Ok(vec![inputs[0].clamp_min(0.0)?])
    }
    fn backward(
        &self,
        ctx: &FunctionCtx,
        grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let x = &ctx.saved_tensors()?[0];
        let g = grads[0].as_ref().expect("materialized");
        let mask = x.gt_scalar(0.0)?.to_dtype(g.dtype())?;
        Ok(vec![Some(g.mul(&mask)?)])
    }
}

/// Two interleaved spiral arms in [-1, 1]^2, labels 0 and 1 (a small
/// deterministic generator: the data needs no RNG crate).
fn two_spirals(points_per_class: usize, noise: f32) -> Result<(Tensor, Tensor)> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f32 / (1u64 << 53) as f32
    };
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..points_per_class {
        let t = 0.3 + 3.5 * std::f32::consts::PI * i as f32 / points_per_class as f32;
        let r = t / (3.8 * std::f32::consts::PI);
        for (label, sign) in [(0i64, 1.0f32), (1, -1.0)] {
            xs.push(sign * r * t.cos() + noise * (uniform() - 0.5));
            xs.push(sign * r * t.sin() + noise * (uniform() - 0.5));
            ys.push(label);
        }
    }
    let n = ys.len();
    Ok((Tensor::from_vec(xs, &[n, 2])?, Tensor::from_vec(ys, &[n])?))
}

struct Mlp {
    layers: Vec<(Tensor, Tensor)>,
}

impl Mlp {
    fn new(sizes: &[usize]) -> Result<Mlp> {
        let mut layers = Vec::new();
        for w in sizes.windows(2) {
            let (fan_in, fan_out) = (w[0], w[1]);
            let weight = Tensor::randn(&[fan_in, fan_out], DType::F32)?
                .mul_scalar((2.0 / fan_in as f64).sqrt())?
                .requires_grad_(true)?;
            let bias = Tensor::zeros(&[fan_out], DType::F32).requires_grad_(true)?;
            layers.push((weight, bias));
        }
        Ok(Mlp { layers })
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.layers
            .iter()
            .flat_map(|(w, b)| [w.clone(), b.clone()])
            .collect()
    }
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        for (i, (w, b)) in self.layers.iter().enumerate() {
            x = x.matmul(w)?.add(b)?;
            if i + 1 < self.layers.len() {
                x = Relu.apply(&[&x])?.remove(0);
            }
        }
        Ok(x)
    }
}

fn cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    loss::cross_entropy(logits, target, None, -100, Reduction::Mean, 0.0)
}

fn accuracy(logits: &Tensor, target: &Tensor) -> Result<f64> {
    let hits = logits.argmax(Some(1), false)?.eq(target)?;
    Ok(hits.to_dtype(DType::F64)?.mean()?.item()?.to_f64())
}

fn main() -> Result<()> {
    let steps = 300;
    manual_seed(0);
    let (x, y) = two_spirals(200, 0.04)?;
    let model = Mlp::new(&[2, 64, 64, 2])?;
    let options = AdamOptions {
        lr: 0.02,
        ..Default::default()
    };
    let mut opt = Adam::new(model.parameters(), options)?;
    println!(
        "two spirals: {} points, MLP 2-64-64-2, {} threads",
        x.shape()[0],
        ferrograd::num_threads()
    );
    let start = Instant::now();
    for step in 1..=steps {
        let logits = model.forward(&x)?;
        let loss = cross_entropy(&logits, &y)?;
        opt.zero_grad()?;
        loss.backward()?;
        opt.step()?;
        if step == 1 || step % 25 == 0 {
            println!(
                "step {step:4}  loss {:.4}  accuracy {:5.1}%",
                loss.item()?.to_f64(),
                100.0 * accuracy(&logits, &y)?
            );
        }
    }
    let acc = {
        let _guard = no_grad();
        accuracy(&model.forward(&x)?, &y)?
    };
    println!(
        "final accuracy {:.1}% after {steps} steps in {:.2} s",
        100.0 * acc,
        start.elapsed().as_secs_f64()
    );
    if acc < 0.9 {
        return Err(ferrograd::Error::runtime(format!(
            "accuracy {acc:.3} is below 0.9: training did not converge"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example end to end (Cargo.toml: `test = true`).
    #[test]
    fn trains_to_high_accuracy() {
        super::main().unwrap();
    }

    /// The hand-written ReLU against finite differences (float64, no input
    /// within eps of the kink), first and second derivatives, slow and fast.
    #[test]
    fn relu_backward_passes_gradcheck() {
        use super::{Function, Relu, Tensor};
        use ferrograd::autograd::gradcheck::{
            gradcheck_with, gradgradcheck_with, GradcheckOptions,
        };
        let x = Tensor::from_vec(vec![-1.5f64, -0.2, 0.3, 2.0, 0.7, -0.9], &[2, 3])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let relu = |xs: &[Tensor]| Relu.apply(&[&xs[0]]);
        for fast_mode in [false, true] {
            let opts = GradcheckOptions {
                fast_mode,
                ..Default::default()
            };
            gradcheck_with(relu, std::slice::from_ref(&x), &opts).unwrap();
            gradgradcheck_with(relu, std::slice::from_ref(&x), None, &opts).unwrap();
        }
    }
}
