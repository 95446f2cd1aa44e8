//! Property tests (proptest) of the layout / view / iteration layers through
//! the public Rust API:
//! - random views (transpose, permute, narrow, strided slice, select,
//!   unsqueeze, squeeze, expand, reshape) of random shapes, read, copied,
//!   mapped, zipped (same, mixed and broadcast layouts), reduced and written
//!   in place, against a naive reference that walks indices;
//! - shape and view arguments, random and huge: broadcasting, expand, view /
//!   reshape, narrow, slice, select, permute, transpose, unsqueeze, flatten
//!   and `getitem` index lists either succeed with the reference's result or
//!   return an error; they never panic.
//!
//! Known deviations (found by these properties, reported on issue 24, not
//! fixed yet): they are skipped unless `PROPERTIES_STRICT=1`, which runs
//! every check as written. (K1 expand past i64::MAX elements, K2 reshape
//! sizes whose product overflows, K3 narrow of a 0-d tensor, K5 an empty
//! tensor that was not `is_contiguous()` and K6 narrow with a huge length
//! were found here and are fixed; their checks run.)
//! - K4: `getitem` accepts two ellipses (`x[..., ...]`); torch: "an index
//!   can only have a single ellipsis ('...')".
//!
//! `PROPTEST_CASES=N` changes the number of cases (default 256 per
//! property); under Miri the properties run a few cases each (see
//! HACKING.md, "Checking unsafe code").

use ferrograd::buffer::layout::broadcast_shapes;
use ferrograd::ops::index::TensorIndex;
use ferrograd::{DType, Result, Tensor};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Whether the known deviations listed above are checked too.
fn strict() -> bool {
    std::env::var("PROPERTIES_STRICT").is_ok_and(|v| v == "1")
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 4 } else { 256 });
    // A fixed seed unless PROPTEST_RNG_SEED names one: the suite (and CI)
    // sees the same cases every run; explore with other seeds and more cases
    // (PROPTEST_RNG_SEED=$RANDOM PROPTEST_CASES=20000, in a debug build so
    // that integer overflow panics).
    let rng_seed = if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
        Config::default().rng_seed
    } else {
        RngSeed::Fixed(0x5eed_f0e6)
    };
    Config {
        cases,
        rng_seed,
        // No files: the regressions found are written into the tests below.
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// The reference: an n-d array of base-element indices, in row-major order
// ---------------------------------------------------------------------------

/// What a view shows: its shape and, for each of its elements in row-major
/// order, the index of the base tensor's element it is. Every view op is
/// written as "which old multi-index does each new multi-index read".
#[derive(Clone, Debug)]
struct Ref {
    shape: Vec<usize>,
    idx: Vec<usize>,
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Every multi-index of `shape`, row-major.
fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut cur = vec![0; shape.len()];
    for _ in 0..n {
        out.push(cur.clone());
        for d in (0..shape.len()).rev() {
            cur[d] += 1;
            if cur[d] < shape[d] {
                break;
            }
            cur[d] = 0;
        }
    }
    out
}

impl Ref {
    fn base(shape: &[usize]) -> Ref {
        Ref {
            shape: shape.to_vec(),
            idx: (0..shape.iter().product()).collect(),
        }
    }
    fn at(&self, m: &[usize]) -> usize {
        let s = row_major_strides(&self.shape);
        self.idx[m.iter().zip(&s).map(|(a, b)| a * b).sum::<usize>()]
    }
    /// The view of `shape` whose element `m` is this one's `old(m)`.
    fn map(&self, shape: Vec<usize>, old: impl Fn(&[usize]) -> Vec<usize>) -> Ref {
        let idx = multi_indices(&shape)
            .iter()
            .map(|m| self.at(&old(m)))
            .collect();
        Ref { shape, idx }
    }
    fn transpose(&self, a: usize, b: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.swap(a, b);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.swap(a, b);
            o
        })
    }
    fn permute(&self, p: &[usize]) -> Ref {
        let shape = p.iter().map(|&d| self.shape[d]).collect();
        self.map(shape, |m| {
            let mut o = vec![0; m.len()];
            for (i, &d) in p.iter().enumerate() {
                o[d] = m[i];
            }
            o
        })
    }
    fn slice(&self, d: usize, start: usize, len: usize, step: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape[d] = len;
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o[d] = start + m[d] * step;
            o
        })
    }
    fn select(&self, d: usize, i: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.remove(d);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.insert(d, i);
            o
        })
    }
    fn unsqueeze(&self, d: usize) -> Ref {
        let mut shape = self.shape.clone();
        shape.insert(d, 1);
        self.map(shape, |m| {
            let mut o = m.to_vec();
            o.remove(d);
            o
        })
    }
    fn squeeze(&self) -> Ref {
        let shape = self.shape.iter().copied().filter(|&d| d != 1).collect();
        self.map(shape, |m| {
            let mut it = m.iter();
            self.shape
                .iter()
                .map(|&d| if d == 1 { 0 } else { *it.next().unwrap() })
                .collect()
        })
    }
    fn expand(&self, shape: &[usize]) -> Ref {
        let lead = shape.len() - self.shape.len();
        self.map(shape.to_vec(), |m| {
            m[lead..]
                .iter()
                .zip(&self.shape)
                .map(|(&i, &d)| if d == 1 { 0 } else { i })
                .collect()
        })
    }
    fn reshape(&self, shape: &[usize]) -> Ref {
        Ref {
            shape: shape.to_vec(),
            idx: self.idx.clone(),
        }
    }
    /// Whether two elements of the view are one base element.
    fn overlaps(&self) -> bool {
        let mut seen = std::collections::HashSet::new();
        !self.idx.iter().all(|i| seen.insert(*i))
    }
}

mod index;
mod shapes;
mod views;
