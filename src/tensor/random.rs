//! Seeded random tensors: one global generator, like torch's default CPU
//! generator (`manual_seed` makes runs reproducible).

use super::{DType, Tensor};
use crate::{bail, Result};
use parking_lot::Mutex;

/// xoshiro256++: small, fast, good statistical quality.
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn seeded(seed: u64) -> Rng {
        // splitmix64 expands the seed into the state.
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E3779B97F4A7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D049BB133111EB);
            x ^ (x >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
    /// Uniform in [0, 1) with 53 random bits.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    fn normal(&mut self) -> f64 {
        // Box-Muller; 1 - u keeps the log argument in (0, 1].
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The global generator and the seed it was last seeded with.
static GENERATOR: Mutex<Option<(Rng, u64)>> = Mutex::new(None);
const DEFAULT_SEED: u64 = 67280421310721;

fn with_rng<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    let mut g = GENERATOR.lock();
    f(&mut g
        .get_or_insert_with(|| (Rng::seeded(DEFAULT_SEED), DEFAULT_SEED))
        .0)
}

/// Reseeds the global generator (torch.manual_seed).
pub fn manual_seed(seed: u64) {
    *GENERATOR.lock() = Some((Rng::seeded(seed), seed));
}

/// The seed the global generator was last seeded with (torch.initial_seed).
pub fn initial_seed() -> u64 {
    GENERATOR.lock().as_ref().map_or(DEFAULT_SEED, |g| g.1)
}

/// The global generator's state: its four state words and its seed.
pub fn rng_state() -> [u64; 5] {
    let mut g = GENERATOR.lock();
    let (rng, seed) = g.get_or_insert_with(|| (Rng::seeded(DEFAULT_SEED), DEFAULT_SEED));
    [rng.s[0], rng.s[1], rng.s[2], rng.s[3], *seed]
}

/// Restores a state returned by [`rng_state`].
pub fn set_rng_state(state: [u64; 5]) -> Result<()> {
    if state[..4].iter().all(|&w| w == 0) {
        bail!(runtime, "invalid RNG state: all-zero generator state");
    }
    *GENERATOR.lock() = Some((
        Rng {
            s: [state[0], state[1], state[2], state[3]],
        },
        state[4],
    ));
    Ok(())
}

fn check_float(dtype: DType, what: &str) -> Result<()> {
    if !dtype.is_floating() {
        bail!(
            not_implemented,
            "\"{}\" not implemented for '{}'",
            what,
            dtype.name()
        );
    }
    Ok(())
}

impl Tensor {
    /// Uniform samples in [0, 1) (float32 samples use 24 random bits, so
    /// rounding can never produce 1.0).
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        check_float(dtype, "check_uniform_bounds")?;
        let n = shape.iter().product();
        if dtype == DType::F32 {
            let v: Vec<f32> = with_rng(|r| {
                (0..n)
                    .map(|_| (r.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32))
                    .collect()
            });
            return Tensor::from_vec(v, shape);
        }
        let v: Vec<f64> = with_rng(|r| (0..n).map(|_| r.uniform()).collect());
        Tensor::from_vec(v, shape)
    }
    /// Standard normal samples.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        check_float(dtype, "normal_kernel_cpu")?;
        let n = shape.iter().product();
        let v: Vec<f64> = with_rng(|r| (0..n).map(|_| r.normal()).collect());
        Ok(Tensor::from_vec(v, shape)?.cast_raw(dtype))
    }
    /// Integers uniform in [low, high).
    pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
        if high <= low {
            bail!(
                runtime,
                "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
                low,
                high
            );
        }
        let span = high.wrapping_sub(low) as u64;
        let n = shape.iter().product();
        let v: Vec<i64> = with_rng(|r| {
            (0..n)
                .map(|_| low.wrapping_add((r.next_u64() % span) as i64))
                .collect()
        });
        Ok(Tensor::from_vec(v, shape)?.cast_raw(dtype))
    }
    /// A random permutation of 0..n.
    pub fn randperm(n: usize) -> Result<Tensor> {
        let mut v: Vec<i64> = (0..n as i64).collect();
        with_rng(|r| {
            for i in (1..n).rev() {
                let j = (r.next_u64() % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
        });
        Tensor::from_vec(v, &[n])
    }
}
