//! The checks themselves: a [`Checker`] per call, the Jacobians it builds,
//! and the finite differences.

use super::*;

type Func<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

pub(super) struct Checker<'a> {
    f: &'a Func<'a>,
    inputs: &'a [Tensor],
    /// Positions of the inputs that require grad.
    diff_in: Vec<usize>,
    /// `f(inputs)`.
    outputs: Vec<Tensor>,
    /// Positions of the outputs that require grad.
    diff_out: Vec<usize>,
    opts: GradcheckOptions,
}

/// Row-major Jacobian of one output with respect to one input:
/// `get(k, j)` = d output\[j\] / d input\[k\].
struct Jacobian {
    n_out: usize,
    v: Vec<f64>,
}

impl Jacobian {
    fn zeros(n_in: usize, n_out: usize) -> Self {
        Jacobian {
            n_out,
            v: vec![0.0; n_in * n_out],
        }
    }
    fn get(&self, k: usize, j: usize) -> f64 {
        self.v[k * self.n_out + j]
    }
    fn set(&mut self, k: usize, j: usize, x: f64) {
        self.v[k * self.n_out + j] = x;
    }
}

fn close(a: f64, n: f64, atol: f64, rtol: f64) -> bool {
    // Written so that a NaN on either side is a mismatch.
    (a - n).abs() <= atol + rtol * n.abs()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub(super) fn tensor_from(
    vals: Vec<f64>,
    shape: &[usize],
    dtype: DType,
    requires_grad: bool,
) -> Result<Tensor> {
    let mut t = Tensor::from_vec(vals, shape)?;
    if dtype != DType::F64 {
        t = t.to_dtype(dtype)?;
    }
    if requires_grad {
        t = t.requires_grad_(true)?;
    }
    Ok(t)
}

/// Multi-index of flat element `k` of `shape`, for messages.
fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[i] = k % d;
            k /= d;
        }
    }
    idx
}

/// A private, fixed-seed stream in [0, 1) (splitmix64), so checks are
/// repeatable and the global RNG is left alone.
pub(super) struct Lcg(u64);

impl Lcg {
    pub(super) fn new(seed: u64) -> Self {
        Lcg(seed)
    }
    pub(super) fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A random non-negative unit vector of `n` entries (torch's fast-mode
    /// `u` and `v`).
    fn unit(&mut self, n: usize) -> Vec<f64> {
        let v: Vec<f64> = (0..n).map(|_| self.next()).collect();
        let norm = dot(&v, &v).sqrt();
        if norm > 0.0 {
            v.into_iter().map(|x| x / norm).collect()
        } else {
            v
        }
    }
}

pub(super) const NO_INPUT_REQUIRES_GRAD: &str = "gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=true.";

const FAILED_NONDET_NOTE: &str = "If backward relies on non-deterministic operations, this failure may be expected: call gradcheck_with with a nondet_tol.";

impl<'a> Checker<'a> {
    pub(super) fn new(
        f: &'a Func<'a>,
        inputs: &'a [Tensor],
        opts: GradcheckOptions,
    ) -> CheckResult<Self> {
        let mut diff_in = Vec::new();
        for (i, x) in inputs.iter().enumerate() {
            if !x.requires_grad() {
                continue;
            }
            if x.shape()
                .iter()
                .zip(x.strides())
                .any(|(&d, &s)| s == 0 && d > 1)
            {
                return Err(GradcheckError::new(
                    GradcheckFailure::InvalidInputs,
                    format!("input {i} has a dimension with stride 0. gradcheck only supports inputs that are non-overlapping to be able to compute the numerical gradients correctly. Call .contiguous() on the input before passing it to gradcheck."),
                )
                .at(Some(i), None));
            }
            diff_in.push(i);
        }
        if diff_in.is_empty() {
            return Err(GradcheckError::new(
                GradcheckFailure::InvalidInputs,
                NO_INPUT_REQUIRES_GRAD,
            ));
        }
        let outputs = f(inputs)?;
        let diff_out = (0..outputs.len())
            .filter(|&o| outputs[o].requires_grad())
            .collect();
        Ok(Checker {
            f,
            inputs,
            diff_in,
            outputs,
            diff_out,
            opts,
        })
    }

    fn diff_inputs(&self) -> Vec<Tensor> {
        self.diff_in
            .iter()
            .map(|&i| self.inputs[i].clone())
            .collect()
    }

    // ----- numerical side -----

    /// `f` at the inputs with input `i` replaced by a contiguous copy whose
    /// values are changed by `perturb`; the values of every floating output
    /// (`None` for the others), checked against the unperturbed outputs.
    fn run_perturbed(
        &self,
        i: usize,
        perturb: impl FnOnce(&mut [f64]),
    ) -> CheckResult<Vec<Option<Vec<f64>>>> {
        let x = &self.inputs[i];
        let mut vals = x.to_f64_vec();
        perturb(&mut vals);
        let p = tensor_from(vals, x.shape(), x.dtype(), x.requires_grad())?;
        let args: Vec<Tensor> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, a)| if k == i { p.clone() } else { a.clone() })
            .collect();
        let outs = (self.f)(&args)?;
        if outs.len() != self.outputs.len() {
            return Err(GradcheckError::new(
                GradcheckFailure::InconsistentOutputs,
                format!(
                    "Expected `f` to return as many outputs when input {i} is perturbed, but got {} and {}.",
                    self.outputs.len(),
                    outs.len()
                ),
            )
            .at(Some(i), None));
        }
        outs.iter()
            .zip(&self.outputs)
            .enumerate()
            .map(|(o, (a, b))| {
                if a.shape() != b.shape() || a.dtype() != b.dtype() {
                    return Err(GradcheckError::new(
                        GradcheckFailure::InconsistentOutputs,
                        format!(
                            "Expected `f` to return outputs with the same shape and dtype when input {i} is perturbed by {}, but output {o} went from {:?} {} to {:?} {}.",
                            self.opts.eps,
                            b.shape(),
                            b.dtype().name(),
                            a.shape(),
                            a.dtype().name()
                        ),
                    )
                    .at(Some(i), Some(o)));
                }
                Ok(a.dtype().is_floating().then(|| a.to_f64_vec()))
            })
            .collect()
    }

    /// `(f(x + d) - f(x - d)) / (2 norm)` for `d = step * direction` added to
    /// input `i` (`direction` a flat vector, or element `k` alone).
    fn central(
        &self,
        i: usize,
        direction: Direction<'_>,
        norm: f64,
    ) -> CheckResult<Vec<Option<Vec<f64>>>> {
        let step = self.opts.eps;
        let apply = |sign: f64| {
            move |v: &mut [f64]| match direction {
                Direction::Element(k) => v[k] += sign * step,
                Direction::Vector(u) => {
                    v.iter_mut().zip(u).for_each(|(x, u)| *x += sign * step * u)
                }
            }
        };
        let minus = self.run_perturbed(i, apply(-1.0))?;
        let plus = self.run_perturbed(i, apply(1.0))?;
        Ok(minus
            .into_iter()
            .zip(plus)
            .map(|(a, b)| {
                a.zip(b).map(|(a, b)| {
                    a.iter()
                        .zip(&b)
                        .map(|(a, b)| (b - a) / (2.0 * norm))
                        .collect()
                })
            })
            .collect())
    }

    /// Numerical Jacobians of every output with respect to input `i` (`None`
    /// for non-floating outputs).
    fn numerical_jacobians(&self, i: usize) -> CheckResult<Vec<Option<Jacobian>>> {
        let n_in = self.inputs[i].numel();
        let mut jac: Vec<Option<Jacobian>> = self
            .outputs
            .iter()
            .map(|o| {
                o.dtype()
                    .is_floating()
                    .then(|| Jacobian::zeros(n_in, o.numel()))
            })
            .collect();
        for k in 0..n_in {
            let cols = self.central(i, Direction::Element(k), self.opts.eps)?;
            for (jac, col) in jac.iter_mut().zip(cols) {
                if let (Some(jac), Some(col)) = (jac, col) {
                    for (j, v) in col.into_iter().enumerate() {
                        jac.set(k, j, v);
                    }
                }
            }
        }
        Ok(jac)
    }

    // ----- analytical side -----

    /// The gradients of every differentiable input for `output` and the
    /// upstream gradient `g`, as flat values (zeros for an input that gets
    /// none), with their shape and dtype checked.
    fn vjp(&self, o: usize, g: &Tensor) -> CheckResult<Vec<Vec<f64>>> {
        let out = &self.outputs[o];
        let grads = crate::autograd::grad(
            std::slice::from_ref(out),
            &self.diff_inputs(),
            &[Some(g.clone())],
            Some(true),
            false,
            true,
            false,
        )
        .map_err(|e| GradcheckError::from(e).at(None, Some(o)))?;
        grads
            .into_iter()
            .zip(&self.diff_in)
            .map(|(gi, &i)| {
                let x = &self.inputs[i];
                let Some(gi) = gi else {
                    return Ok(vec![0.0; x.numel()]);
                };
                if gi.shape() != x.shape() {
                    return Err(GradcheckError::new(
                        GradcheckFailure::IncorrectSize,
                        format!(
                            "Analytical gradient has incorrect size: the gradient of output {o} with respect to input {i} has shape {:?}, the input {:?}.",
                            gi.shape(),
                            x.shape()
                        ),
                    )
                    .at(Some(i), Some(o)));
                }
                if self.opts.check_grad_dtypes && gi.dtype() != x.dtype() {
                    return Err(GradcheckError::new(
                        GradcheckFailure::DtypeMismatch,
                        format!(
                            "Gradient has dtype mismatch: the gradient of output {o} with respect to input {i} is {}, the input {}.",
                            gi.dtype().name(),
                            x.dtype().name()
                        ),
                    )
                    .at(Some(i), Some(o)));
                }
                Ok(gi.to_f64_vec())
            })
            .collect()
    }

    /// The vector-Jacobian products of output `o` for each upstream gradient
    /// in `gs`, computed twice: `result[input][g]`, after checking that both
    /// runs agree within `nondet_tol`.
    fn vjps_reentrant(&self, o: usize, gs: &[Tensor]) -> CheckResult<Vec<Vec<Vec<f64>>>> {
        let run = || -> CheckResult<Vec<Vec<Vec<f64>>>> {
            let mut per_input = vec![Vec::with_capacity(gs.len()); self.diff_in.len()];
            for g in gs {
                for (d, v) in self.vjp(o, g)?.into_iter().enumerate() {
                    per_input[d].push(v);
                }
            }
            Ok(per_input)
        };
        let first = run()?;
        let second = run()?;
        for (d, (a, b)) in first.iter().zip(&second).enumerate() {
            let diff = a
                .iter()
                .flatten()
                .zip(b.iter().flatten())
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f64, |m, x| {
                    if x.is_nan() || m.is_nan() {
                        f64::NAN
                    } else {
                        m.max(x)
                    }
                });
            // A NaN difference fails too.
            if diff.is_nan() || diff > self.opts.nondet_tol {
                let i = self.diff_in[d];
                return Err(GradcheckError::new(
                    GradcheckFailure::NotReentrant,
                    format!(
                        "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives different values (output {o}, input {i}: they differ by up to {diff:e}; the tolerance for nondeterminism was {}). {FAILED_NONDET_NOTE}",
                        self.opts.nondet_tol
                    ),
                )
                .at(Some(i), Some(o)));
            }
        }
        Ok(first)
    }

    /// Analytical Jacobians of output `o` with respect to each differentiable
    /// input (one-hot upstream gradients), reentrancy checked.
    fn analytical_jacobians(&self, o: usize) -> CheckResult<Vec<Jacobian>> {
        let out = &self.outputs[o];
        let n_out = out.numel();
        let one_hots: Vec<Tensor> = (0..n_out)
            .map(|j| {
                let mut v = vec![0.0; n_out];
                v[j] = 1.0;
                tensor_from(v, out.shape(), out.dtype(), false)
            })
            .collect::<Result<_>>()?;
        let vjps = self.vjps_reentrant(o, &one_hots)?;
        Ok(vjps
            .into_iter()
            .zip(&self.diff_in)
            .map(|(cols, &i)| {
                let mut jac = Jacobian::zeros(self.inputs[i].numel(), n_out);
                for (j, col) in cols.into_iter().enumerate() {
                    for (k, v) in col.into_iter().enumerate() {
                        jac.set(k, j, v);
                    }
                }
                jac
            })
            .collect())
    }

    // ----- comparisons -----

    fn mismatches(
        &self,
        analytical: &Jacobian,
        numerical: &Jacobian,
        n_in: usize,
    ) -> Vec<Mismatch> {
        let mut out = Vec::new();
        for k in 0..n_in {
            for j in 0..numerical.n_out {
                let (a, n) = (analytical.get(k, j), numerical.get(k, j));
                if !close(a, n, self.opts.atol, self.opts.rtol) {
                    out.push(Mismatch {
                        input_element: k,
                        output_element: j,
                        numerical: n,
                        analytical: a,
                    });
                }
            }
        }
        out
    }

    fn describe(&self, entries: &[Mismatch], i: usize, o: usize) -> String {
        const SHOWN: usize = 12;
        let (xs, os) = (self.inputs[i].shape(), self.outputs[o].shape());
        let total = xs.iter().product::<usize>() * os.iter().product::<usize>();
        let mut msg = format!(
            "{} of {total} entries differ (|analytical - numerical| > atol + rtol * |numerical|, atol={}, rtol={}):",
            entries.len(),
            self.opts.atol,
            self.opts.rtol
        );
        for m in entries.iter().take(SHOWN) {
            msg += &format!(
                "\n  d output[{o}]{:?} / d input[{i}]{:?}: numerical {}, analytical {}",
                unravel(m.output_element, os),
                unravel(m.input_element, xs),
                m.numerical,
                m.analytical
            );
        }
        if entries.len() > SHOWN {
            msg += &format!("\n  ... and {} more", entries.len() - SHOWN);
        }
        msg
    }

    fn mismatch_error(
        &self,
        i: usize,
        o: usize,
        entries: Vec<Mismatch>,
        msg: String,
    ) -> GradcheckError {
        let mut e =
            GradcheckError::new(GradcheckFailure::JacobianMismatch, msg).at(Some(i), Some(o));
        e.entries = entries;
        e
    }

    fn no_differentiable_outputs_error() -> GradcheckError {
        GradcheckError::new(
            GradcheckFailure::NonzeroNumericalGradient,
            "Numerical gradient for function expected to be zero: no output requires grad, yet an output changes with an input.",
        )
    }

    // ----- slow mode: whole Jacobians -----

    pub(super) fn slow(&self) -> CheckResult<()> {
        let numerical: Vec<Vec<Option<Jacobian>>> = self
            .diff_in
            .iter()
            .map(|&i| self.numerical_jacobians(i))
            .collect::<CheckResult<_>>()?;
        if self.diff_out.is_empty() {
            for (d, jacs) in numerical.iter().enumerate() {
                for (o, jac) in jacs.iter().enumerate() {
                    if jac.as_ref().is_some_and(|j| j.v.iter().any(|&v| v != 0.0)) {
                        return Err(Self::no_differentiable_outputs_error()
                            .at(Some(self.diff_in[d]), Some(o)));
                    }
                }
            }
            return Ok(());
        }
        for &o in &self.diff_out {
            let analytical = self.analytical_jacobians(o)?;
            for (d, a) in analytical.iter().enumerate() {
                let i = self.diff_in[d];
                let n = numerical[d][o]
                    .as_ref()
                    .expect("a differentiable output is floating");
                let entries = self.mismatches(a, n, self.inputs[i].numel());
                if !entries.is_empty() {
                    let msg = format!(
                        "Jacobian mismatch for output {o} with respect to input {i}: {}",
                        self.describe(&entries, i, o)
                    );
                    return Err(self.mismatch_error(i, o, entries, msg));
                }
            }
        }
        Ok(())
    }

    // ----- fast mode: v^T J u -----

    pub(super) fn fast(&self) -> CheckResult<()> {
        let mut rng = Lcg::new(67_280_421_310_721);
        let all_u: Vec<Vec<f64>> = self
            .diff_in
            .iter()
            .map(|&i| rng.unit(self.inputs[i].numel()))
            .collect();
        let all_v: Vec<Vec<f64>> = self
            .diff_out
            .iter()
            .map(|&o| rng.unit(self.outputs[o].numel()))
            .collect();
        // Numerical J u per (input, output).
        let ju: Vec<Vec<Option<Vec<f64>>>> = self
            .diff_in
            .iter()
            .zip(&all_u)
            .map(|(&i, u)| self.central(i, Direction::Vector(u), self.opts.eps))
            .collect::<CheckResult<_>>()?;
        if self.diff_out.is_empty() {
            for (d, per_out) in ju.iter().enumerate() {
                for (o, j) in per_out.iter().enumerate() {
                    if j.as_ref().is_some_and(|j| {
                        j.iter()
                            .any(|v| v.is_nan() || v.abs() > self.opts.nondet_tol)
                    }) {
                        return Err(Self::no_differentiable_outputs_error()
                            .at(Some(self.diff_in[d]), Some(o)));
                    }
                }
            }
            return Ok(());
        }
        for (&o, v) in self.diff_out.iter().zip(&all_v) {
            let out = &self.outputs[o];
            let g = tensor_from(v.clone(), out.shape(), out.dtype(), false)?;
            let vj = self.vjps_reentrant(o, std::slice::from_ref(&g))?;
            for (d, (&i, u)) in self.diff_in.iter().zip(&all_u).enumerate() {
                let analytical = dot(&vj[d][0], u);
                let numerical = dot(v, ju[d][o].as_ref().expect("floating output"));
                let atol = self.opts.atol * u.iter().sum::<f64>() * v.iter().sum::<f64>();
                if !close(analytical, numerical, atol, self.opts.rtol) {
                    return Err(self.fast_failure(i, o, numerical, analytical));
                }
            }
        }
        Ok(())
    }

    /// The error for a fast-mode mismatch, with the full Jacobians of the
    /// pair recomputed to show which entries differ.
    fn fast_failure(&self, i: usize, o: usize, numerical: f64, analytical: f64) -> GradcheckError {
        let mut msg = format!(
            "Jacobian mismatch for output {o} with respect to input {i} (fast mode): v^T J u is {numerical} numerically, {analytical} analytically."
        );
        let slow = || -> CheckResult<Vec<Mismatch>> {
            let n = self
                .numerical_jacobians(i)?
                .swap_remove(o)
                .expect("floating output");
            let d = self
                .diff_in
                .iter()
                .position(|&x| x == i)
                .expect("a differentiable input");
            let a = self.analytical_jacobians(o)?.swap_remove(d);
            Ok(self.mismatches(&a, &n, self.inputs[i].numel()))
        };
        match slow() {
            Ok(entries) if entries.is_empty() => {
                msg += "\nThe whole Jacobians (slow mode) agree element by element, so this check might pass with fast_mode = false.";
                self.mismatch_error(i, o, entries, msg)
            }
            Ok(entries) => {
                msg += &format!(
                    "\nIn the whole Jacobians (slow mode), {}",
                    self.describe(&entries, i, o)
                );
                self.mismatch_error(i, o, entries, msg)
            }
            Err(e) => {
                msg += &format!("\nRecomputing the whole Jacobians failed: {}", e.msg);
                self.mismatch_error(i, o, Vec::new(), msg)
            }
        }
    }

    // ----- backward's contract -----

    /// Zero upstream gradients give zero input gradients of the inputs'
    /// shapes (and dtypes).
    pub(super) fn mul_by_grad_output(&self) -> CheckResult<()> {
        if self.diff_out.is_empty() {
            return Ok(());
        }
        let outs: Vec<Tensor> = self
            .diff_out
            .iter()
            .map(|&o| self.outputs[o].clone())
            .collect();
        let zeros: Vec<Option<Tensor>> = outs.iter().map(|o| Some(o.zeros_like())).collect();
        let grads =
            crate::autograd::grad(&outs, &self.diff_inputs(), &zeros, None, false, true, false)?;
        for (gi, &i) in grads.iter().zip(&self.diff_in) {
            let Some(gi) = gi else { continue };
            let x = &self.inputs[i];
            if gi.to_f64_vec().iter().any(|&v| v != 0.0) {
                return Err(GradcheckError::new(
                    GradcheckFailure::NotMultipliedByGradOutput,
                    format!("backward not multiplied by grad_output: zero output gradients give a non-zero gradient for input {i}"),
                )
                .at(Some(i), None));
            }
            if gi.dtype() != x.dtype() {
                return Err(GradcheckError::new(
                    GradcheckFailure::DtypeMismatch,
                    format!(
                        "grad is incorrect type: input {i} is {}, its gradient {}",
                        x.dtype().name(),
                        gi.dtype().name()
                    ),
                )
                .at(Some(i), None));
            }
            if gi.shape() != x.shape() {
                return Err(GradcheckError::new(
                    GradcheckFailure::IncorrectSize,
                    format!(
                        "grad is incorrect size: input {i} has shape {:?}, its gradient {:?}",
                        x.shape(),
                        gi.shape()
                    ),
                )
                .at(Some(i), None));
            }
        }
        Ok(())
    }

    /// Backward copes with undefined output gradients: every output's
    /// gradient undefined, then (with several outputs) one at a time.
    pub(super) fn undefined_grad(&self) -> CheckResult<()> {
        let diff_out = |outs: Vec<Tensor>| -> Vec<Tensor> {
            outs.into_iter().filter(Tensor::requires_grad).collect()
        };
        let undefine = |t: &Tensor| -> Result<Tensor> { Ok(UndefinedGrad.apply(&[t])?.remove(0)) };
        let mut cases: Vec<(Option<usize>, Vec<Tensor>)> = Vec::new();
        let outs = diff_out((self.f)(self.inputs)?);
        let n = outs.len();
        if n == 0 {
            return Ok(());
        }
        cases.push((None, outs.iter().map(undefine).collect::<Result<_>>()?));
        if n > 1 {
            for u in 0..n {
                let outs = diff_out((self.f)(self.inputs)?);
                let outs = outs
                    .iter()
                    .enumerate()
                    .map(|(k, o)| if k == u { undefine(o) } else { Ok(o.clone()) })
                    .collect::<Result<_>>()?;
                cases.push((Some(self.diff_out[u]), outs));
            }
        }
        for (which, outs) in cases {
            let what = match which {
                None => "every output gradient undefined".to_string(),
                Some(o) => format!("the gradient of output {o} undefined"),
            };
            let zeros: Vec<Option<Tensor>> = outs.iter().map(|o| Some(o.zeros_like())).collect();
            let grads = crate::autograd::grad(&outs, &self.diff_inputs(), &zeros, None, false, true, false)
                .map_err(|e| {
                    let mut g = GradcheckError::new(
                        GradcheckFailure::UndefinedGrad,
                        format!("Expected backward function to handle undefined output grads ({what}), but it failed: {}", e.msg),
                    )
                    .at(None, which);
                    g.source = Some(Box::new(e));
                    g
                })?;
            for (gi, &i) in grads.iter().zip(&self.diff_in) {
                if gi
                    .as_ref()
                    .is_some_and(|g| g.to_f64_vec().iter().any(|&v| v != 0.0))
                {
                    return Err(GradcheckError::new(
                        GradcheckFailure::UndefinedGrad,
                        format!("Expected all input grads to be undefined or zero when all output grads are undefined or zero ({what}), but input {i} got a non-zero gradient."),
                    )
                    .at(Some(i), which));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Direction<'a> {
    Element(usize),
    Vector(&'a [f64]),
}

/// torch's `UndefinedGrad`: the identity, whose backward sends no gradient
/// to the node that made its input.
struct UndefinedGrad;

impl Function for UndefinedGrad {
    fn forward(&mut self, _ctx: &FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let _g = no_grad();
        Ok(vec![inputs[0].clone_tensor()?])
    }
    fn backward(
        &self,
        _ctx: &FunctionCtx,
        _grads: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None])
    }
}
