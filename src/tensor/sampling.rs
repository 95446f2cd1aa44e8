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
    #[inline(always)]
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }

    #[inline(always)]
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

    #[inline(always)]
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

    #[inline(always)]
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
#[inline(always)]
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

/// The slice loops of sampling, each built for the baseline, AVX2+FMA and
/// AVX-512 (`kernels::simd::dispatched!`): on the SIMD paths `mul_add` is
/// an FMA instruction instead of a call to libm's `fma`, and the values
/// are the same bits on every path (a fused multiply-add is exact).
mod loops {
    use super::{avx_mathfun, normal_16_f64};
    use crate::kernels::simd::dispatched;

    dispatched! {
        /// `uniform_real_distribution<float>` of each word (its low 24
        /// bits), then scaled to [a, b): torch's float `uniform_`.
        pub fn uniform_f32s / uniform_f32s_plain / uniform_f32s_avx2 <>(words: &[u32], out: &mut [f32], a: f32, b: f32) {
            for (o, &w) in out.iter_mut().zip(words) {
                let u = (w & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
                *o = u.mul_add(b - a, a);
            }
        }
    }

    dispatched! {
        /// `uniform_real_distribution<double>` of each pair of words (the
        /// first one high, 53 bits), then scaled to [a, b).
        pub fn uniform_f64s / uniform_f64s_plain / uniform_f64s_avx2 <>(words: &[u32], out: &mut [f64], a: f64, b: f64) {
            for (o, w) in out.iter_mut().zip(words.chunks_exact(2)) {
                let bits = ((w[0] as u64) << 32 | w[1] as u64) & ((1u64 << 53) - 1);
                *o = (bits as f64 * (1.0 / (1u64 << 53) as f64)).mul_add(b - a, a);
            }
        }
    }

    dispatched! {
        /// Box-Muller over each whole block of 16 float32 uniforms.
        pub fn normal_blocks_f32 / normal_blocks_f32_plain / normal_blocks_f32_avx2 <>(d: &mut [f32], mean: f32, std: f32) {
            for block in d.chunks_exact_mut(16) {
                avx_mathfun::normal_16(block, mean, std);
            }
        }
    }

    dispatched! {
        /// Box-Muller over each whole block of 16 float64 uniforms.
        pub fn normal_blocks_f64 / normal_blocks_f64_plain / normal_blocks_f64_avx2 <>(d: &mut [f64], mean: f64, std: f64) {
            for block in d.chunks_exact_mut(16) {
                normal_16_f64(block, mean, std);
            }
        }
    }
}

/// Samples in the order torch's kernel writes them (memory order), at the
/// precision they were drawn in.
enum Samples {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Samples {
    /// `n` uniforms in [from, to): float32 for float32 and the 2-byte
    /// floats (which round them, as torch does), float64 otherwise.
    fn uniform(g: &mut GenState, n: usize, dtype: DType, from: f64, to: f64) -> Samples {
        if dtype.compute() == DType::F32 {
            let mut out = vec![0f32; n];
            loops::uniform_f32s(&g.words(n), &mut out, from as f32, to as f32);
            Samples::F32(out)
        } else {
            let mut out = vec![0f64; n];
            loops::uniform_f64s(&g.words(2 * n), &mut out, from, to);
            Samples::F64(out)
        }
    }

    /// `n` normals: torch's `normal_fill` (uniforms for every element,
    /// Box-Muller over blocks of 16, the last partial block redrawn and
    /// recomputed) for `blocks` (contiguous, 16 or more elements), else its
    /// scalar cached Box-Muller.
    fn normal(
        g: &mut GenState,
        n: usize,
        dtype: DType,
        blocks: bool,
        mean: f64,
        std: f64,
    ) -> Samples {
        if !blocks {
            return Samples::F64((0..n).map(|_| g.normal_f64().mul_add(std, mean)).collect());
        }
        let whole = n / 16 * 16;
        if dtype.compute() == DType::F32 {
            let (m, s) = (mean as f32, std as f32);
            let mut d = vec![0f32; n];
            loops::uniform_f32s(&g.words(n), &mut d, 0.0, 1.0);
            loops::normal_blocks_f32(&mut d[..whole], m, s);
            if whole < n {
                loops::uniform_f32s(&g.words(16), &mut d[n - 16..], 0.0, 1.0);
                loops::normal_blocks_f32(&mut d[n - 16..], m, s);
            }
            Samples::F32(d)
        } else {
            let mut d = vec![0f64; n];
            loops::uniform_f64s(&g.words(2 * n), &mut d, 0.0, 1.0);
            loops::normal_blocks_f64(&mut d[..whole], mean, std);
            if whole < n {
                loops::uniform_f64s(&g.words(32), &mut d[n - 16..], 0.0, 1.0);
                loops::normal_blocks_f64(&mut d[n - 16..], mean, std);
            }
            Samples::F64(d)
        }
    }

    /// The samples as a tensor of `shape` whose memory `order` they follow
    /// (still in their own dtype).
    fn into_tensor(self, shape: &[usize], order: &[usize]) -> Result<Tensor> {
        let pshape: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
        let t = match self {
            Samples::F32(v) => Tensor::from_vec(v, &pshape)?,
            Samples::F64(v) => Tensor::from_vec(v, &pshape)?,
        };
        t.permute(&inverse(order))
    }
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
    /// Fills `self` with samples given in memory order.
    fn fill_samples(&self, samples: Samples) -> Result<()> {
        self.copy_(&samples.into_tensor(self.shape(), &memory_order(self))?)
    }

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
        let gen = Generator::or_default(gen);
        let samples = Samples::uniform(&mut gen.lock(), self.numel(), self.dtype(), from, to);
        self.fill_samples(samples)
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
        let blocks = n >= 16 && self.is_contiguous();
        let gen = Generator::or_default(gen);
        let samples = Samples::normal(&mut gen.lock(), n, self.dtype(), blocks, mean, std);
        self.fill_samples(samples)
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
        let n = shape.iter().product();
        let gen = Generator::or_default(gen);
        let samples = Samples::uniform(&mut gen.lock(), n, dtype, 0.0, 1.0);
        let order: Vec<usize> = (0..shape.len()).collect();
        samples.into_tensor(shape, &order)?.to_dtype(dtype)
    }

    /// Standard normal samples (torch.randn).
    pub fn randn_gen(shape: &[usize], dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
        float_only(dtype, "normal_kernel_cpu")?;
        let n = shape.iter().product();
        let gen = Generator::or_default(gen);
        let samples = Samples::normal(&mut gen.lock(), n, dtype, n >= 16, 0.0, 1.0);
        let order: Vec<usize> = (0..shape.len()).collect();
        samples.into_tensor(shape, &order)?.to_dtype(dtype)
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
