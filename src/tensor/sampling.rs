//! Sampling with torch's CPU transforms (ATen's `DistributionsHelper.h`,
//! `TransformationHelper.h` and `cpu/DistributionTemplates.h`), drawing
//! from a [`Generator`]: the same seed gives torch's values.
//!
//! Values are produced in the order torch's kernels write them (memory
//! order of the output), then copied in with `copy_`, so torch's in-place
//! rules (version counter, leaf checks) apply unchanged.

use super::random::{GenState, Generator};
use super::{DType, Tensor};
use crate::error::cpp_double;
use crate::{bail, Result};

/// float32 normals for 16 uniforms in place: torch's `normal_fill_16_AVX2`
/// (avx_mathfun's cephes `log256_ps`/`sincos256_ps`), evaluated lane by lane
/// with the fused multiply-adds GCC forms from those intrinsics, so the
/// results are bitwise torch's on an AVX2 machine.
mod avx_mathfun {
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }

    pub(super) fn log(x: f32) -> f32 {
        let x = x.max(f32::from_bits(0x0080_0000));
        let imm0 = (x.to_bits() >> 23) as i32 - 0x7f;
        let mut x = f32::from_bits((x.to_bits() & !0x7f80_0000) | 0.5f32.to_bits());
        let mut e = imm0 as f32 + 1.0;
        let tmp = if x < std::f32::consts::FRAC_1_SQRT_2 {
            e -= 1.0;
            x
        } else {
            0.0
        };
        x = x - 1.0 + tmp;
        let z = x * x;
        const P: [f32; 9] = [
            7.037_683_6e-2,
            -1.151_461e-1,
            1.167_699_9e-1,
            -1.242_014_1e-1,
            1.424_932_3e-1,
            -1.666_805_8e-1,
            2.000_071_4e-1,
            -2.499_999_4e-1,
            3.333_333e-1,
        ];
        let mut y = P[0];
        for p in &P[1..] {
            y = fma(y, x, *p);
        }
        y *= x;
        y = fma(y, z, e * -2.121_944_4e-4);
        y -= z * 0.5;
        fma(e, 0.693_359_4, x + y)
    }

    pub(super) fn sincos(x: f32) -> (f32, f32) {
        let mut sign_sin = x < 0.0;
        let mut x = x.abs();
        let j = (((x * 1.273_239_5) as i32) + 1) & !1;
        let y = j as f32;
        let swap_sin = j & 4 != 0;
        let poly = j & 2 == 0;
        x = fma(y, -0.785_156_25, x);
        x = fma(y, -2.418_756_5e-4, x);
        x = fma(y, -3.774_895e-8, x);
        let sign_cos = (!(j - 2)) & 4 != 0;
        sign_sin ^= swap_sin;
        let z = x * x;
        let mut yc = fma(2.443_315_7e-5, z, -1.388_731_6e-3);
        yc = fma(yc, z, 4.166_664_6e-2);
        yc *= z;
        yc = fma(yc, z, -(z * 0.5));
        yc += 1.0;
        let mut ys = fma(-1.951_529_6e-4, z, 8.332_161e-3);
        ys = fma(ys, z, -1.666_665_5e-1);
        ys *= z;
        ys = fma(ys, x, x);
        let (mut s, mut c) = if poly { (ys, yc) } else { (yc, ys) };
        if sign_sin {
            s = -s;
        }
        if sign_cos {
            c = -c;
        }
        (s, c)
    }

    pub(super) fn normal_16(d: &mut [f32], mean: f32, std: f32) {
        let two_pi = (2.0 * std::f64::consts::PI) as f32;
        for j in 0..8 {
            let u1 = 1.0 - d[j];
            let u2 = d[j + 8];
            let radius = (-2.0 * log(u1)).sqrt();
            let (s, c) = sincos(two_pi * u2);
            d[j] = fma(radius * c, std, mean);
            d[j + 8] = fma(radius * s, std, mean);
        }
    }
}

/// float64 normals for 16 uniforms: torch's scalar `normal_fill_16`.
fn normal_16_f64(d: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        d[j] = (radius * theta.cos()).mul_add(std, mean);
        d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// torch's `normal_fill`: uniforms for every element, Box-Muller over
/// blocks of 16, and the last partial block redrawn and recomputed.
fn normal_fill<T: Copy>(
    g: &mut GenState,
    n: usize,
    uniform: fn(&mut GenState) -> T,
    block: impl Fn(&mut [T]),
) -> Vec<T> {
    let mut d: Vec<T> = (0..n).map(|_| uniform(g)).collect();
    let mut i = 0;
    while i + 16 <= n {
        block(&mut d[i..i + 16]);
        i += 16;
    }
    if !n.is_multiple_of(16) {
        for v in &mut d[n - 16..] {
            *v = uniform(g);
        }
        block(&mut d[n - 16..]);
    }
    d
}

/// A tensor of `dtype` and `shape` from values listed in `order`
/// (`order[k]` is the dim that is k-th outermost in memory).
fn tensor_in_order(
    vals: Vec<f64>,
    shape: &[usize],
    order: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let pshape: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
    let t = match dtype {
        DType::F32 => {
            Tensor::from_vec(vals.iter().map(|&v| v as f32).collect::<Vec<_>>(), &pshape)?
        }
        DType::F64 => Tensor::from_vec(vals, &pshape)?,
        low if low.is_reduced_float() => Tensor::from_vec(vals, &pshape)?.try_cast_raw(low)?,
        DType::Bool => {
            Tensor::from_vec(vals.iter().map(|&v| v != 0.0).collect::<Vec<_>>(), &pshape)?
        }
        int => Tensor::from_vec(vals.iter().map(|&v| v as i64).collect::<Vec<_>>(), &pshape)?
            .cast_raw(int),
    };
    t.permute(&inverse(order))
}

/// The permutation that undoes `order`.
fn inverse(order: &[usize]) -> Vec<i64> {
    let mut inv = vec![0i64; order.len()];
    for (k, &d) in order.iter().enumerate() {
        inv[d] = k as i64;
    }
    inv
}

/// The dims of `t` from outermost to innermost in memory: TensorIterator's
/// order for a nullary op (strides descending; ties keep the logical order).
fn memory_order(t: &Tensor) -> Vec<usize> {
    let mut order: Vec<usize> = (0..t.ndim()).collect();
    if !t.is_contiguous() {
        let st = t.strides();
        let sh = t.shape();
        order.sort_by(|&a, &b| {
            let key = |d: usize| if sh[d] == 1 { usize::MAX } else { st[d] };
            key(b).cmp(&key(a))
        });
    }
    order
}

fn float_only(t: DType, kernel: &str) -> Result<()> {
    if !t.is_floating() {
        bail!(
            not_implemented,
            "\"{kernel}\" not implemented for '{}'",
            t.scalar_type_name()
        );
    }
    Ok(())
}

impl Tensor {
    /// Fills `self` with `vals` given in memory order.
    fn fill_in_order(&self, vals: Vec<f64>) -> Result<()> {
        let order = memory_order(self);
        let src = tensor_in_order(vals, self.shape(), &order, self.dtype())?;
        self.copy_(&src)
    }

    /// Fills `self` with integers given in memory order.
    pub(crate) fn fill_ints_in_order(&self, vals: Vec<i64>) -> Result<()> {
        let order = memory_order(self);
        let pshape: Vec<usize> = order.iter().map(|&d| self.shape()[d]).collect();
        let src = Tensor::from_vec(vals, &pshape)?.cast_raw(self.dtype());
        self.copy_(&src.permute(&inverse(&order))?)
    }

    /// `uniform_(from, to)` with torch's values.
    pub fn uniform_gen_(&self, from: f64, to: f64, gen: Option<&Generator>) -> Result<()> {
        float_only(self.dtype(), "check_uniform_bounds")?;
        if from > to {
            bail!(
                runtime,
                "uniform_ expects to return a [from, to) range, but found from={} > to={}",
                cpp_double(from),
                cpp_double(to)
            );
        }
        let n = self.numel();
        let gen = Generator::or_default(gen);
        let vals: Vec<f64> = {
            let mut g = gen.lock();
            // float16/bfloat16 draw as float32 and round (torch's values)
            if self.dtype().compute() == DType::F32 {
                let (a, b) = (from as f32, to as f32);
                (0..n)
                    .map(|_| g.uniform_f32().mul_add(b - a, a) as f64)
                    .collect()
            } else {
                (0..n)
                    .map(|_| g.uniform_f64().mul_add(to - from, from))
                    .collect()
            }
        };
        self.fill_in_order(vals)
    }

    /// `normal_(mean, std)` with torch's values: the vectorised Box-Muller
    /// over blocks of 16 for contiguous tensors of 16 or more elements, the
    /// scalar cached Box-Muller otherwise.
    pub fn normal_gen_(&self, mean: f64, std: f64, gen: Option<&Generator>) -> Result<()> {
        float_only(self.dtype(), "normal_kernel_cpu")?;
        if std < 0.0 {
            bail!(
                runtime,
                "normal expects std >= 0.0, but found std {}",
                cpp_double(std)
            );
        }
        let n = self.numel();
        let gen = Generator::or_default(gen);
        let vals: Vec<f64> = {
            let mut g = gen.lock();
            if n >= 16 && self.is_contiguous() {
                // float16/bfloat16 as float32, rounded (torch's values up to
                // 16 elements; longer ones differ, see the tests)
                if self.dtype().compute() == DType::F32 {
                    let (m, s) = (mean as f32, std as f32);
                    normal_fill(&mut g, n, GenState::uniform_f32, |d| {
                        avx_mathfun::normal_16(d, m, s)
                    })
                    .into_iter()
                    .map(|v| v as f64)
                    .collect()
                } else {
                    normal_fill(&mut g, n, GenState::uniform_f64, |d| {
                        normal_16_f64(d, mean, std)
                    })
                }
            } else {
                (0..n).map(|_| g.normal_f64().mul_add(std, mean)).collect()
            }
        };
        self.fill_in_order(vals)
    }

    /// `bernoulli_(p)` with a scalar p: `uniform_double < p` per element
    /// (torch's generic CPU kernel; on Intel CPUs torch's MKL build uses
    /// MKL's stream instead, see the test notes).
    pub fn bernoulli_scalar_gen_(&self, p: f64, gen: Option<&Generator>) -> Result<()> {
        if !(0.0..=1.0).contains(&p) {
            bail!(
                runtime,
                "bernoulli_ expects p to be in [0, 1], but got p={}",
                cpp_double(p)
            );
        }
        let n = self.numel();
        let gen = Generator::or_default(gen);
        let vals: Vec<f64> = {
            let mut g = gen.lock();
            (0..n).map(|_| (g.uniform_f64() < p) as u8 as f64).collect()
        };
        self.fill_in_order(vals)
    }

    /// `bernoulli(self)`: 1 with probability `self[i]` (a float32 p draws 24
    /// bits, a float64 p 53, as torch's `bernoulli_tensor_cpu_p_`).
    pub fn bernoulli_gen(&self, gen: Option<&Generator>) -> Result<Tensor> {
        float_only(self.dtype(), "bernoulli_tensor_cpu_p_")?;
        let p = self.to_f64_vec();
        if p.iter().any(|&v| !(0.0..=1.0).contains(&v)) {
            bail!(
                runtime,
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false."
            );
        }
        let gen = Generator::or_default(gen);
        let vals: Vec<f64> = {
            let mut g = gen.lock();
            if self.dtype().compute() == DType::F32 {
                p.iter()
                    .map(|&q| (g.uniform_f32() < q as f32) as u8 as f64)
                    .collect()
            } else {
                p.iter()
                    .map(|&q| (g.uniform_f64() < q) as u8 as f64)
                    .collect()
            }
        };
        tensor_in_order(
            vals,
            self.shape(),
            &(0..self.ndim()).collect::<Vec<_>>(),
            self.dtype(),
        )?
        .contiguous()
    }

    /// `exponential_(lambd)`: `-1 / lambd * log1p(-u)` with a double u.
    pub fn exponential_gen_(&self, lambd: f64, gen: Option<&Generator>) -> Result<()> {
        if !self.dtype().is_floating() {
            bail!(
                runtime,
                "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
                self.dtype().scalar_type_name()
            );
        }
        if lambd <= 0.0 {
            bail!(
                runtime,
                "exponential_ expects lambda > 0.0, but found lambda={}",
                cpp_double(lambd)
            );
        }
        let n = self.numel();
        let gen = Generator::or_default(gen);
        let vals: Vec<f64> = {
            let mut g = gen.lock();
            (0..n)
                .map(|_| -1.0 / lambd * (-g.uniform_f64()).ln_1p())
                .collect()
        };
        self.fill_in_order(vals)
    }

    /// Integers uniform in [low, high) (torch.randint).
    pub fn randint_gen(
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
        gen: Option<&Generator>,
    ) -> Result<Tensor> {
        if high <= low {
            bail!(
                runtime,
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            );
        }
        let range = high.wrapping_sub(low) as u64;
        let n: usize = shape.iter().product();
        let gen = Generator::or_default(gen);
        let wide = range >= 1u64 << 28 && dtype != DType::Bool;
        let v: Vec<i64> = {
            let mut g = gen.lock();
            (0..n)
                .map(|_| {
                    let w = if wide {
                        g.random64()
                    } else {
                        g.random() as u64
                    };
                    ((w % range) as i64).wrapping_add(low)
                })
                .collect()
        };
        Ok(Tensor::from_vec(v, shape)?.cast_raw(dtype))
    }

    /// A random permutation of 0..n (torch's `randperm_cpu`: a Fisher-Yates
    /// pass from the front, `random() % (n - i)`).
    pub fn randperm_gen(n: usize, gen: Option<&Generator>) -> Result<Tensor> {
        let mut v: Vec<i64> = (0..n as i64).collect();
        let gen = Generator::or_default(gen);
        let mut g = gen.lock();
        let small = (n as u64) < u32::MAX as u64 / 20;
        for i in 0..n.saturating_sub(1) {
            let w = if small {
                g.random() as u64
            } else {
                g.random64()
            };
            let z = (w % (n - i) as u64) as usize;
            v.swap(i, z + i);
        }
        drop(g);
        Tensor::from_vec(v, &[n])
    }

    /// Uniform samples in [0, 1) (torch.rand).
    pub fn rand_gen(shape: &[usize], dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
        float_only(dtype, "check_uniform_bounds")?;
        let t = Tensor::zeros(shape, dtype);
        t.uniform_gen_(0.0, 1.0, gen)?;
        Ok(t)
    }

    /// Standard normal samples (torch.randn).
    pub fn randn_gen(shape: &[usize], dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
        float_only(dtype, "normal_kernel_cpu")?;
        let t = Tensor::zeros(shape, dtype);
        t.normal_gen_(0.0, 1.0, gen)?;
        Ok(t)
    }

    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::rand_gen(shape, dtype, None)
    }
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::randn_gen(shape, dtype, None)
    }
    pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::randint_gen(low, high, shape, dtype, None)
    }
    pub fn randperm(n: usize) -> Result<Tensor> {
        Tensor::randperm_gen(n, None)
    }
}
