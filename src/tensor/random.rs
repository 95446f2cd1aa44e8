//! Random generators with torch's CPU stream: an mt19937 engine laid out as
//! ATen's `at::mt19937`, seeded the same way, plus the cached second
//! Box-Muller sample (float and double) that ATen's `CPUGeneratorImpl`
//! keeps. The same seed gives the same 32-bit words as torch, and the
//! samplers in `sampling.rs` apply torch's transforms to them, so values
//! match torch number for number.
//!
//! `get_state`/`set_state` use torch's byte layout (`CPUGeneratorImplState`,
//! 5056 bytes on x86-64), so a state taken from torch restores here and the
//! other way round.

use crate::{bail, Result};
use parking_lot::{Mutex, MutexGuard};
use std::sync::{Arc, OnceLock};

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UMASK: u32 = 0x8000_0000;
const LMASK: u32 = 0x7fff_ffff;

/// torch's default seed for a fresh generator (`default_rng_seed_val`).
pub const DEFAULT_SEED: u64 = 67280421310721;

/// Bytes in torch's `CPUGeneratorImplState` (x86-64 layout).
pub const STATE_BYTES: usize = 5056;

/// ATen's mt19937: the usual Mersenne Twister, with its bookkeeping
/// (`left`, `next`) kept as ATen keeps it so that states round-trip.
#[derive(Clone)]
pub(crate) struct Mt19937 {
    seed: u64,
    left: i32,
    seeded: bool,
    next: u32,
    state: [u32; N],
}

impl Mt19937 {
    pub(crate) fn new(seed: u64) -> Mt19937 {
        let mut state = [0u32; N];
        state[0] = seed as u32;
        for j in 1..N {
            let prev = state[j - 1];
            state[j] = 1812433253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 {
            seed,
            left: 1,
            seeded: true,
            next: 0,
            state,
        }
    }

    fn next_state(&mut self) {
        #[inline(always)]
        fn twist(u: u32, v: u32) -> u32 {
            (((u & UMASK) | (v & LMASK)) >> 1) ^ if v & 1 != 0 { MATRIX_A } else { 0 }
        }
        let s = &mut self.state;
        self.left = N as i32;
        self.next = 0;
        // the usual loop `s[i] = s[(i + M) % N] ^ twist(s[i], s[(i + 1) % N])`
        // for i in 0..N, cut where the indices wrap
        for i in 0..N - M {
            s[i] = s[i + M] ^ twist(s[i], s[i + 1]);
        }
        for i in N - M..N - 1 {
            s[i] = s[i + M - N] ^ twist(s[i], s[i + 1]);
        }
        s[N - 1] = s[M - 1] ^ twist(s[N - 1], s[0]);
    }

    #[inline(always)]
    fn temper(mut y: u32) -> u32 {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    pub(crate) fn next_u32(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.next_state();
        }
        let y = self.state[self.next as usize];
        self.next += 1;
        Self::temper(y)
    }

    /// The next `out.len()` words, the ones `next_u32` would give one by
    /// one, leaving the same state: each run of the state tempered in one
    /// loop.
    pub(crate) fn fill(&mut self, out: &mut [u32]) {
        let mut done = 0;
        while done < out.len() {
            if self.left <= 1 {
                // `next_u32` would refresh here and take word 0
                self.next_state();
                self.left = N as i32 + 1;
            }
            let k = (out.len() - done).min(self.left as usize - 1);
            let start = self.next as usize;
            for (o, &y) in out[done..done + k]
                .iter_mut()
                .zip(&self.state[start..start + k])
            {
                *o = Self::temper(y);
            }
            self.next += k as u32;
            self.left -= k as i32;
            done += k;
        }
    }

    fn is_valid(&self) -> bool {
        self.seeded && 0 < self.left && self.left <= N as i32 && self.next <= N as u32
    }
}

/// The state of one generator: the engine and the cached normal samples.
#[derive(Clone)]
pub(crate) struct GenState {
    pub(crate) engine: Mt19937,
    pub(crate) next_float_normal: Option<f32>,
    pub(crate) next_double_normal: Option<f64>,
}

impl GenState {
    fn new(seed: u64) -> GenState {
        GenState {
            engine: Mt19937::new(seed),
            next_float_normal: None,
            next_double_normal: None,
        }
    }
    /// torch's `random()`: one 32-bit word.
    pub(crate) fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }
    /// torch's `random64()`: two words, the first one high.
    pub(crate) fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32() as u64;
        let lo = self.engine.next_u32() as u64;
        (hi << 32) | lo
    }
    /// The next `n` words, in order.
    pub(crate) fn words(&mut self, n: usize) -> Vec<u32> {
        let mut out = vec![0u32; n];
        self.engine.fill(&mut out);
        out
    }
    /// `uniform_real_distribution<float>(0, 1)`: 24 random bits.
    pub(crate) fn uniform_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }
    /// `uniform_real_distribution<double>(0, 1)`: 53 random bits.
    pub(crate) fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// `normal_distribution<double>(0, 1)`: Box-Muller, caching the sine
    /// sample for the next call.
    pub(crate) fn normal_f64(&mut self) -> f64 {
        if let Some(v) = self.next_double_normal.take() {
            return v;
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        r * theta.cos()
    }

    /// torch's `CPUGeneratorImplState` bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; STATE_BYTES];
        let e = &self.engine;
        b[0..8].copy_from_slice(&e.seed.to_le_bytes());
        b[8..12].copy_from_slice(&e.left.to_le_bytes());
        b[12..16].copy_from_slice(&(e.seeded as i32).to_le_bytes());
        b[16..24].copy_from_slice(&(e.next as u64).to_le_bytes());
        for (i, w) in e.state.iter().enumerate() {
            b[24 + 8 * i..32 + 8 * i].copy_from_slice(&(*w as u64).to_le_bytes());
        }
        // normal_x (5016), normal_y (5024), normal_rho (5032), normal_is_valid (5040)
        if let Some(y) = self.next_double_normal {
            b[5024..5032].copy_from_slice(&y.to_le_bytes());
            b[5040..5044].copy_from_slice(&1i32.to_le_bytes());
        }
        // next_float_normal_sample (5048), is_next_float_normal_sample_valid (5052)
        if let Some(f) = self.next_float_normal {
            b[5048..5052].copy_from_slice(&f.to_le_bytes());
            b[5052] = 1;
        }
        b
    }

    fn from_bytes(b: &[u8]) -> Result<GenState> {
        if b.len() != STATE_BYTES {
            bail!(
                runtime,
                "Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG state size to be {}",
                b.len()
            );
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let i32_at = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let mut state = [0u32; N];
        for (i, w) in state.iter_mut().enumerate() {
            *w = u64_at(24 + 8 * i) as u32;
        }
        let engine = Mt19937 {
            seed: u64_at(0),
            left: i32_at(8),
            seeded: i32_at(12) != 0,
            next: u64_at(16) as u32,
            state,
        };
        if !engine.is_valid() {
            bail!(runtime, "Invalid mt19937 state");
        }
        let next_double_normal =
            (i32_at(5040) != 0).then(|| f64::from_le_bytes(b[5024..5032].try_into().unwrap()));
        let next_float_normal =
            (b[5052] != 0).then(|| f32::from_le_bytes(b[5048..5052].try_into().unwrap()));
        Ok(GenState {
            engine,
            next_float_normal,
            next_double_normal,
        })
    }
}

/// A CPU random generator (torch.Generator): cheap to clone, clones share
/// the state.
#[derive(Clone)]
pub struct Generator(Arc<Mutex<GenState>>);

impl Default for Generator {
    fn default() -> Self {
        Generator::new()
    }
}

impl Generator {
    /// A generator seeded with torch's default seed.
    pub fn new() -> Generator {
        Generator(Arc::new(Mutex::new(GenState::new(DEFAULT_SEED))))
    }
    /// The process-wide default generator (what `manual_seed` seeds).
    pub fn default_generator() -> Generator {
        static DEFAULT: OnceLock<Generator> = OnceLock::new();
        DEFAULT.get_or_init(Generator::new).clone()
    }
    /// `gen`, or the default generator.
    pub fn or_default(gen: Option<&Generator>) -> Generator {
        gen.cloned().unwrap_or_else(Generator::default_generator)
    }
    pub(crate) fn lock(&self) -> MutexGuard<'_, GenState> {
        self.0.lock()
    }
    /// Reseeds (torch's `set_current_seed`): drops the cached samples.
    pub fn manual_seed(&self, seed: u64) {
        *self.0.lock() = GenState::new(seed);
    }
    /// Reseeds from a non-deterministic source (torch's
    /// `getNonDeterministicRandom`: 63 bits); returns the seed.
    pub fn seed(&self) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        h.write_u128(now.map(|d| d.as_nanos()).unwrap_or(0));
        let seed = h.finish() & ((1u64 << 63) - 1);
        self.manual_seed(seed);
        seed
    }
    pub fn initial_seed(&self) -> u64 {
        self.0.lock().engine.seed
    }
    /// The state in torch's byte layout.
    pub fn get_state(&self) -> Vec<u8> {
        self.0.lock().to_bytes()
    }
    /// Restores a state from [`Generator::get_state`] (or torch's); a bad
    /// state changes nothing.
    pub fn set_state(&self, bytes: &[u8]) -> Result<()> {
        let s = GenState::from_bytes(bytes)?;
        *self.0.lock() = s;
        Ok(())
    }
    /// Whether two handles are the same generator.
    pub fn same(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Reseeds the default generator (torch.manual_seed).
pub fn manual_seed(seed: u64) {
    Generator::default_generator().manual_seed(seed)
}

/// The seed the default generator was last seeded with (torch.initial_seed).
pub fn initial_seed() -> u64 {
    Generator::default_generator().initial_seed()
}

/// The default generator's state, in torch's byte layout.
pub fn rng_state() -> Vec<u8> {
    Generator::default_generator().get_state()
}

/// Restores the default generator's state.
pub fn set_rng_state(state: &[u8]) -> Result<()> {
    Generator::default_generator().set_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_words_are_the_words_one_by_one() {
        for (skip, n) in [(0, 1), (0, 623), (1, 624), (5, 2000), (620, 10), (623, 1)] {
            let (mut a, mut b) = (Mt19937::new(7), Mt19937::new(7));
            for _ in 0..skip {
                a.next_u32();
                b.next_u32();
            }
            let one_by_one: Vec<u32> = (0..n).map(|_| a.next_u32()).collect();
            let mut bulk = vec![0u32; n];
            b.fill(&mut bulk);
            assert_eq!(one_by_one, bulk, "skip {skip}, n {n}");
            assert_eq!((a.left, a.next), (b.left, b.next), "skip {skip}, n {n}");
            assert_eq!(
                a.next_u32(),
                b.next_u32(),
                "skip {skip}, n {n}: the word after"
            );
        }
    }

    #[test]
    fn mt19937_reference_words() {
        // The reference mt19937 with init_genrand(5489): its 10000th output
        // is 4123659995 (C++11 [rand.predef]).
        let mut m = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = m.next_u32();
        }
        assert_eq!(last, 4123659995);
    }

    #[test]
    fn state_round_trips() {
        let g = Generator::new();
        g.manual_seed(7);
        let mut s = g.lock();
        s.normal_f64();
        drop(s);
        let st = g.get_state();
        let a: Vec<f64> = (0..5).map(|_| g.lock().normal_f64()).collect();
        g.set_state(&st).unwrap();
        let b: Vec<f64> = (0..5).map(|_| g.lock().normal_f64()).collect();
        assert_eq!(a, b);
        assert!(g.set_state(&st[1..]).is_err());
    }
}
