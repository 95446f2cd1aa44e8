//! `multinomial` and `random_` with torch's CPU algorithms (ATen's
//! `Distributions.cpp`, `cpu/MultinomialKernel.cpp`, `random_*_kernel`).

use super::random::Generator;
use super::{DType, Tensor};
use crate::{bail, Result};

impl Tensor {
    /// `multinomial(num_samples, replacement)`: indices drawn with the
    /// weights in the last dim of a 1-D or 2-D tensor. Without replacement
    /// (or for one sample) torch's `argmax/topk(p / q)` with `q ~ Exp(1)`;
    /// with replacement a binary search of the normalised cumulative sum
    /// for each double uniform.
    pub fn multinomial_gen(
        &self,
        n_sample: i64,
        replacement: bool,
        gen: Option<&Generator>,
    ) -> Result<Tensor> {
        let nd = self.ndim();
        if nd != 1 && nd != 2 {
            bail!(runtime, "prob_dist must be 1 or 2 dim");
        }
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "multinomial only supports floating-point dtypes for input, got: {}",
                self.dtype().scalar_type_name()
            );
        }
        if n_sample <= 0 {
            bail!(runtime, "cannot sample n_sample <= 0 samples");
        }
        let n_cat = self.shape()[nd - 1];
        if !replacement && n_sample as usize > n_cat {
            bail!(
                runtime,
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
            );
        }
        if n_cat > 1 << 24 {
            bail!(runtime, "number of categories cannot exceed 2^24");
        }
        // A detached input: none of the ops below records a graph.
        let p = self.detach();
        let n_dist = if nd == 2 { self.shape()[0] } else { 1 };
        let vals = p.to_f64_vec();
        if !replacement || n_sample == 1 {
            if vals.iter().any(|v| !(*v >= 0.0 && *v < f64::INFINITY)) {
                bail!(
                    runtime,
                    "probability tensor contains either `inf`, `nan` or element < 0"
                );
            }
            if vals
                .chunks(n_cat.max(1))
                .any(|row| row.iter().sum::<f64>() == 0.0)
            {
                bail!(
                    runtime,
                    "invalid multinomial distribution (sum of probabilities <= 0)"
                );
            }
            let q = p.zeros_like();
            q.exponential_gen_(1.0, gen)?;
            let q = p.div(&q)?;
            return if n_sample == 1 {
                q.argmax(Some(-1), true)
            } else {
                Ok(q.topk(n_sample, -1, true)?.1)
            };
        }
        let gen = Generator::or_default(gen);
        let mut g = gen.lock();
        let mut out = Vec::with_capacity(n_dist * n_sample as usize);
        let f32_acc = self.dtype().compute() == DType::F32;
        for row in vals.chunks(n_cat.max(1)) {
            // The cumulative sum in the input's dtype, as torch keeps it.
            let mut cum = Vec::with_capacity(n_cat);
            let (mut s32, mut s64) = (0f32, 0f64);
            for &v in row {
                if v < 0.0 {
                    bail!(
                        runtime,
                        "invalid multinomial distribution (encountering probability entry < 0)"
                    );
                }
                if !v.is_finite() {
                    bail!(
                        runtime,
                        "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
                    );
                }
                if f32_acc {
                    s32 += v as f32;
                    cum.push(s32 as f64);
                } else {
                    s64 += v;
                    cum.push(s64);
                }
            }
            let sum = if f32_acc { s32 as f64 } else { s64 };
            if sum <= 0.0 {
                bail!(
                    runtime,
                    "invalid multinomial distribution (sum of probabilities <= 0)"
                );
            }
            for c in cum.iter_mut() {
                *c = if f32_acc {
                    (*c as f32 / s32) as f64
                } else {
                    *c / s64
                };
            }
            *cum.last_mut().unwrap() = 1.0;
            for _ in 0..n_sample {
                let u = g.uniform_f64();
                let (mut lo, mut hi) = (0usize, n_cat);
                while hi > lo {
                    let mid = lo + (hi - lo) / 2;
                    if cum[mid] < u {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                out.push(lo as i64);
            }
        }
        drop(g);
        let shape: Vec<usize> = if nd == 2 {
            vec![n_dist, n_sample as usize]
        } else {
            vec![n_sample as usize]
        };
        Tensor::from_vec(out, &shape)
    }

    /// `random_()` without bounds: int64 over [0, 2**63), float32 over
    /// [0, 2**24], float64 over [0, 2**53], bool 0 or 1.
    pub fn random_default_gen_(&self, gen: Option<&Generator>) -> Result<()> {
        let n = self.numel();
        let dtype = self.dtype();
        let gen = Generator::or_default(gen);
        let vals: Vec<i64> = {
            let mut g = gen.lock();
            (0..n)
                .map(|_| match dtype {
                    DType::I64 => (g.random64() % (1u64 << 63)) as i64,
                    DType::U8 | DType::I8 | DType::I16 | DType::I32 => {
                        let max = dtype.int_bounds().map_or(0, |b| b.1) as u64;
                        (g.random() as u64 % (max + 1)) as i64
                    }
                    DType::F64 => (g.random64() % ((1u64 << 53) + 1)) as i64,
                    DType::F32 => (g.random() as u64 % ((1u64 << 24) + 1)) as i64,
                    DType::F16 => (g.random() as u64 % ((1u64 << 11) + 1)) as i64,
                    DType::BF16 => (g.random() as u64 % ((1u64 << 8) + 1)) as i64,
                    DType::Bool => (g.random() & 1) as i64,
                })
                .collect()
        };
        self.fill_ints_in_order(vals)
    }

    /// `random_(from, to)`; `to=None` means the dtype's largest integer
    /// (inclusive), and `from=-2**63, to=None` on int64 the full range.
    pub fn random_range_gen_(
        &self,
        from: i64,
        to: Option<i64>,
        gen: Option<&Generator>,
    ) -> Result<()> {
        let dtype = self.dtype();
        let range: u64 = match to {
            Some(to) => {
                if from >= to {
                    bail!(
                        runtime,
                        "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
                    );
                }
                to.wrapping_sub(from) as u64
            }
            None => {
                let to_inc: i64 = match dtype {
                    DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                        dtype.int_bounds().map_or(0, |b| b.1)
                    }
                    DType::F64 => 1 << 53,
                    DType::F32 => 1 << 24,
                    DType::F16 => 1 << 11,
                    DType::BF16 => 1 << 8,
                    DType::Bool => 1,
                };
                if from > to_inc {
                    bail!(
                        runtime,
                        "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from={from} > to_inc={to_inc}"
                    );
                }
                if dtype == DType::I64 && from == i64::MIN {
                    // The full 64-bit range: one 64-bit word per element.
                    let gen = Generator::or_default(gen);
                    let vals: Vec<i64> = {
                        let mut g = gen.lock();
                        (0..self.numel()).map(|_| g.random64() as i64).collect()
                    };
                    return self.fill_ints_in_order(vals);
                }
                (to_inc.wrapping_sub(from) as u64).wrapping_add(1)
            }
        };
        let n = self.numel();
        let gen = Generator::or_default(gen);
        let wide = range >= 1u64 << 28 && dtype != DType::Bool;
        let vals: Vec<i64> = {
            let mut g = gen.lock();
            (0..n)
                .map(|_| {
                    let w = if wide {
                        g.random64()
                    } else {
                        g.random() as u64
                    };
                    ((w % range) as i64).wrapping_add(from)
                })
                .collect()
        };
        self.fill_ints_in_order(vals)
    }
}
