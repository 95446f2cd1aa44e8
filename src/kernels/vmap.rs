//! Strided-level loops for the SIMD functions of [`super::unary::vmath`],
//! through the iteration layer: contiguous runs go to the function's slice
//! kernel (`Unary::map`, on the best SIMD path), broadcast and gathered
//! elements to `Unary::exact`; results are the same bits either way.
//! Split over the threads from [`SIMD_MIN_PAR`] elements.

use super::elementwise::{RowApply, RowMap, RowZip};
use super::unary::vmath::{self, Binary, BinaryWith, Unary, UnaryWith};
use crate::buffer::{DType, Element, Strided};
use crate::Result;
use half::{bf16, f16};
use std::marker::PhantomData;

/// Elements from which a SIMD transcendental kernel (about 1-5 ns per
/// element) is split over the threads.
const SIMD_MIN_PAR: usize = 1 << 13;

/// A vmath function type as an iteration-layer kernel.
struct Kernel<K>(PhantomData<fn() -> K>);

impl<K> Kernel<K> {
    const NEW: Self = Kernel(PhantomData);
}

impl<T: Copy, K: Unary<T>> RowMap<T, T> for Kernel<K> {
    fn run(&self, x: &[T], out: &mut [T]) {
        K::map(x, out)
    }
    fn one(&self, x: T) -> T {
        K::exact(x)
    }
}

impl<T: Copy, K: Unary<T>> RowApply<T> for Kernel<K> {
    fn run(&self, buf: &mut [T]) {
        K::apply(buf)
    }
    fn one(&self, x: T) -> T {
        K::exact(x)
    }
}

impl<T: Copy + Sync, K: Binary<T>> RowZip<T, T> for Kernel<K> {
    fn run(&self, a: &[T], b: &[T], out: &mut [T]) {
        K::zip(a, b, out)
    }
    fn one(&self, a: T, b: T) -> T {
        K::eval(a, b)
    }
    fn left(&self, a: &[T], b: T, out: &mut [T]) {
        vmath::map_with(&WithRight(b, PhantomData::<fn() -> K>), a, out)
    }
    fn right(&self, a: T, b: &[T], out: &mut [T]) {
        vmath::map_with(&WithLeft(a, PhantomData::<fn() -> K>), b, out)
    }
}

// A two-argument function with one argument fixed, as a [`UnaryWith`]: the
// loop runs on the SIMD path with the function inlined (a closure around
// a large function, such as gelu's derivative, was left a call into
// baseline code: ~30x slower).

/// `K(x, b)` for fixed `b`.
struct WithRight<T, K>(T, PhantomData<fn() -> K>);
/// `K(a, x)` for fixed `a`.
struct WithLeft<T, K>(T, PhantomData<fn() -> K>);

impl<T: Copy + Sync, K: Binary<T>> UnaryWith<T> for WithRight<T, K> {
    #[inline(always)]
    fn eval(&self, x: T) -> T {
        K::eval(x, self.0)
    }
}
impl<T: Copy + Sync, K: Binary<T>> UnaryWith<T> for WithLeft<T, K> {
    #[inline(always)]
    fn eval(&self, x: T) -> T {
        K::eval(self.0, x)
    }
}

/// `k(x, b)` for fixed `b`.
struct ValueRight<'a, T, K>(&'a K, T);
/// `k(a, x)` for fixed `a`.
struct ValueLeft<'a, T, K>(&'a K, T);

impl<T: Copy + Sync, K: BinaryWith<T>> UnaryWith<T> for ValueRight<'_, T, K> {
    #[inline(always)]
    fn eval(&self, x: T) -> T {
        self.0.eval(x, self.1)
    }
}
impl<T: Copy + Sync, K: BinaryWith<T>> UnaryWith<T> for ValueLeft<'_, T, K> {
    #[inline(always)]
    fn eval(&self, x: T) -> T {
        self.0.eval(self.1, x)
    }
}

/// A [`UnaryWith`] or [`BinaryWith`] value as an iteration-layer kernel.
struct With<K>(K);

impl<T: Copy, K: UnaryWith<T>> RowMap<T, T> for With<K> {
    fn run(&self, x: &[T], out: &mut [T]) {
        self.0.map(x, out)
    }
    fn one(&self, x: T) -> T {
        self.0.eval(x)
    }
}

impl<T: Copy, K: UnaryWith<T>> RowApply<T> for With<K> {
    fn run(&self, buf: &mut [T]) {
        self.0.apply(buf)
    }
    fn one(&self, x: T) -> T {
        self.0.eval(x)
    }
}

impl<T: Copy + Sync, K: BinaryWith<T>> RowZip<T, T> for With<K> {
    fn run(&self, a: &[T], b: &[T], out: &mut [T]) {
        vmath::zip_with(&self.0, a, b, out)
    }
    fn one(&self, a: T, b: T) -> T {
        self.0.eval(a, b)
    }
    fn left(&self, a: &[T], b: T, out: &mut [T]) {
        vmath::map_with(&ValueRight(&self.0, b), a, out)
    }
    fn right(&self, a: T, b: &[T], out: &mut [T]) {
        vmath::map_with(&ValueLeft(&self.0, a), b, out)
    }
}

/// `out[i] = k(a[i])` for a function with parameters (see [`map1`]).
pub fn map1_with<T: Element, K: UnaryWith<T>>(a: &Strided, k: K) -> Result<Strided> {
    super::unary::map1_kernel(a, SIMD_MIN_PAR, &With(k))
}

/// `a[i] = k(a[i])` in place for a function with parameters. Does not bump
/// the version.
pub fn apply1_with<T: Element, K: UnaryWith<T>>(a: &Strided, k: K) {
    super::unary::apply1_kernel(a, SIMD_MIN_PAR, &With(k))
}

/// `out[i] = k(a[i], b[i])` with broadcasting (see [`map2_simd`]).
pub fn map2_with<T: Element, K: BinaryWith<T>>(a: &Strided, b: &Strided, k: K) -> Result<Strided> {
    super::binary::map2_kernel(a, b, SIMD_MIN_PAR, &With(k))
}

/// `out[i] = K(a[i])` for a tensor of dtype `T`, laid out as torch lays
/// out a unary op's result.
pub fn map1<T: Element, K: Unary<T>>(a: &Strided) -> Result<Strided> {
    super::unary::map1_kernel(a, SIMD_MIN_PAR, &Kernel::<K>::NEW)
}

/// `a[i] = K(a[i])` in place for a tensor of dtype `T`. Does not bump the
/// version.
pub fn apply1<T: Element, K: Unary<T>>(a: &Strided) {
    super::unary::apply1_kernel(a, SIMD_MIN_PAR, &Kernel::<K>::NEW)
}

/// [`map1`] on a float16 or bfloat16 tensor: computed in float32, rounded
/// back once (see [`super::reduced`]).
pub fn map1_reduced<K: Unary<f32>>(a: &Strided) -> Result<Strided> {
    use super::reduced::Widened;
    let k = Kernel::<K>::NEW;
    match a.dtype() {
        DType::F16 => super::unary::map1_kernel::<f16, f16, _>(a, SIMD_MIN_PAR, &Widened(&k)),
        DType::BF16 => super::unary::map1_kernel::<bf16, bf16, _>(a, SIMD_MIN_PAR, &Widened(&k)),
        other => crate::bail!(internal, "map1_reduced on {}", other.name()),
    }
}

/// [`map2_simd`] on two tensors of one 2-byte float dtype.
pub fn map2_simd_reduced<K: Binary<f32>>(a: &Strided, b: &Strided) -> Result<Strided> {
    use super::reduced::Widened;
    let k = Kernel::<K>::NEW;
    let grain = SIMD_MIN_PAR;
    match a.dtype() {
        DType::F16 => super::binary::map2_kernel::<f16, f16, _>(a, b, grain, &Widened(&k)),
        DType::BF16 => super::binary::map2_kernel::<bf16, bf16, _>(a, b, grain, &Widened(&k)),
        other => crate::bail!(internal, "map2_simd_reduced on {}", other.name()),
    }
}

/// `out[i] = K(a[i], b[i])` with broadcasting, `a` and `b` of dtype `T`.
pub fn map2_simd<T: Element, K: Binary<T>>(a: &Strided, b: &Strided) -> Result<Strided> {
    super::binary::map2_kernel(a, b, SIMD_MIN_PAR, &Kernel::<K>::NEW)
}
