//! Tensor constructors.

use super::{DType, Element, Layout, Scalar, Storage, StorageData, Strided, Tensor};
use crate::{bail, Result};
use std::sync::Arc;

impl Tensor {
    /// A contiguous tensor over `data` with `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let n: usize = shape.iter().product();
        if n != data.len() {
            bail!(
                runtime,
                "shape {:?} is invalid for input of size {}",
                shape,
                data.len()
            );
        }
        Ok(Self::from_storage(
            Arc::new(Storage::from_vec(data)),
            Layout::contiguous(shape),
        ))
    }
    /// Contiguous tensor from already-typed storage data (length must match).
    pub fn from_data(data: StorageData, shape: &[usize]) -> Tensor {
        Tensor::from(Strided::contiguous(data, shape))
    }
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Tensor {
        Self::try_full(shape, value, dtype).unwrap_or_else(|e| panic!("{e}"))
    }
    /// [`Tensor::full`], failing with torch's out-of-memory RuntimeError
    /// when the system refuses the allocation (what factories call).
    pub fn try_full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let n = shape.iter().product();
        let data = crate::dispatch_all!(dtype, T => T::wrap(filled(n, value.cast::<T>())?));
        Ok(Self::from_data(data, shape))
    }
    /// torch's `empty`: a tensor whose values are unspecified (a reused
    /// buffer keeps what it held; a fresh one is zeros), for callers that
    /// write every element. Never uninitialised memory.
    pub fn try_empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = shape.iter().product();
        let data = crate::dispatch_all!(dtype, T => T::wrap(super::pool::try_buffer::<T>(n)?));
        Ok(Self::from_data(data, shape))
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
        Self::full(shape, Scalar::Int(0), dtype)
    }
    pub fn ones(shape: &[usize], dtype: DType) -> Tensor {
        Self::full(shape, Scalar::Int(1), dtype)
    }
    /// A 0-dim tensor holding `value`, of `dtype`.
    pub fn scalar(value: Scalar, dtype: DType) -> Tensor {
        Self::full(&[], value, dtype)
    }
    pub fn zeros_like(&self) -> Tensor {
        Self::zeros(self.shape(), self.dtype())
    }
    pub fn ones_like(&self) -> Tensor {
        Self::ones(self.shape(), self.dtype())
    }
    /// `start, start+step, ...` below `end` (torch.arange). As in torch,
    /// the length is `ceil((end - start) / step)` computed in f64, and for an
    /// integer dtype `start` and `step` are first cast to integers.
    /// `dtype: None` is torch's inference: the default float dtype when any
    /// bound is a float, else int64.
    pub fn arange(
        start: Scalar,
        end: Scalar,
        step: Scalar,
        dtype: impl Into<Option<DType>>,
    ) -> Result<Tensor> {
        let any_float = [start, end, step]
            .iter()
            .any(|x| matches!(x, Scalar::Float(_)));
        let dtype = dtype.into().unwrap_or(if any_float {
            super::dtype::default_float()
        } else {
            DType::I64
        });
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if !s.is_finite() || !e.is_finite() {
            bail!(
                runtime,
                "unsupported range: {} -> {}",
                fmt_bound(start),
                fmt_bound(end)
            );
        }
        if dtype == DType::Bool {
            bail!(not_implemented, "\"arange_cpu\" not implemented for 'Bool'");
        }
        if st == 0.0 {
            bail!(runtime, "step must be nonzero");
        }
        if dtype.is_integral() && scalar_as_i64(step) == 0 {
            // a float step that truncates to 0 (torch: ValueError)
            bail!(value, "step must be nonzero");
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            bail!(
                runtime,
                "upper bound and lower bound inconsistent with step sign"
            );
        }
        let len = ((e - s) / st).ceil();
        if !len.is_finite() || len >= (1u64 << 53) as f64 {
            bail!(runtime, "invalid size, possible overflow?");
        }
        let n = len.max(0.0) as usize;
        Ok(match dtype {
            DType::F32 => Self::from_vec(
                (0..n)
                    .map(|i| st.mul_add(i as f64, s) as f32)
                    .collect::<Vec<_>>(),
                &[n],
            )?,
            DType::F64 => Self::from_vec(
                (0..n).map(|i| st.mul_add(i as f64, s)).collect::<Vec<_>>(),
                &[n],
            )?,
            DType::Bool => unreachable!("rejected above"),
            int => {
                let (s, st) = (scalar_as_i64(start), scalar_as_i64(step));
                Self::from_vec(
                    (0..n as i64)
                        .map(|i| s.wrapping_add(i.wrapping_mul(st)))
                        .collect::<Vec<_>>(),
                    &[n],
                )?
                .cast_raw(int)
            }
        })
    }
    /// `steps` evenly spaced values from `start` to `end` inclusive
    /// (torch.linspace). Floating dtypes compute in their own precision, as
    /// torch does; integer dtypes compute in f64 and truncate.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        /// torch's kernel: the first half counts up from `start`, the second
        /// half counts down from `end`, so both ends are exact.
        fn fill<T: super::Float>(
            start: T,
            end: T,
            steps: usize,
            fma: impl Fn(T, T, T) -> T,
        ) -> Vec<T> {
            let step = (end - start) / T::from_f64(steps.saturating_sub(1).max(1) as f64);
            if steps == 1 {
                return vec![start];
            }
            let half = steps / 2;
            // torch's compiled kernel fuses `start + step * i` into an FMA.
            (0..steps)
                .map(|i| {
                    if i < half {
                        fma(step, T::from_f64(i as f64), start)
                    } else {
                        fma(-step, T::from_f64((steps - 1 - i) as f64), end)
                    }
                })
                .collect()
        }
        Ok(match dtype {
            DType::F32 => Tensor::from_vec(
                fill(start as f32, end as f32, steps, f32::mul_add),
                &[steps],
            )?,
            DType::F64 => Tensor::from_vec(fill(start, end, steps, f64::mul_add), &[steps])?,
            // Integer dtypes: the ends are cast first, the values computed in
            // f64 and truncated.
            DType::Bool => bail!(
                not_implemented,
                "\"linspace_cpu\" not implemented for 'Bool'"
            ),
            int => Tensor::from_vec(
                fill(start.trunc(), end.trunc(), steps, f64::mul_add),
                &[steps],
            )?
            .cast_raw(int),
        })
    }
    /// A tensor of `shape` holding `values` (row-major) as `dtype`, converted
    /// as torch.tensor converts Python numbers: for an integer dtype each
    /// number is range-checked first (c10's `checked_convert`: uint8 takes
    /// -255..=255, negatives wrapping), float16/bfloat16 round from float64.
    pub fn from_scalars(values: &[Scalar], shape: &[usize], dtype: DType) -> Result<Tensor> {
        let fits = |v: &Scalar| matches!(v, Scalar::Bool(_)) || v.checked_to(dtype).is_ok();
        if dtype.is_integral() && !values.iter().all(fits) {
            bail!(
                runtime,
                "value cannot be converted to type {} without overflow",
                dtype.name()
            );
        }
        fn each<T: Element>(
            values: &[Scalar],
            shape: &[usize],
            f: fn(Scalar) -> T,
        ) -> Result<Tensor> {
            Tensor::from_vec(values.iter().map(|&v| f(v)).collect::<Vec<T>>(), shape)
        }
        Ok(match dtype {
            DType::Bool => each(values, shape, |v| v.to_f64() != 0.0)?,
            DType::F32 => each(values, shape, |v| match v {
                Scalar::Int(i) => i as f32,
                v => v.to_f64() as f32,
            })?,
            DType::F64 => each(values, shape, Scalar::to_f64)?,
            low if low.is_reduced_float() => {
                Self::from_scalars(values, shape, DType::F64)?.try_cast_raw(low)?
            }
            int => each(values, shape, |v| match v {
                Scalar::Int(i) => i,
                v => v.to_f64() as i64,
            })?
            .cast_raw(int),
        })
    }
    pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
        let mut v = vec![0.0f64; n * m];
        for i in 0..n.min(m) {
            v[i * m + i] = 1.0;
        }
        Tensor::from_vec(v, &[n, m])?.to_dtype(dtype)
    }
}

/// A range bound as torch prints it in errors (`inf`, `nan`, `1`, `2.5`).
fn fmt_bound(s: Scalar) -> String {
    match s {
        Scalar::Float(f) if f.is_nan() => "nan".into(),
        Scalar::Float(f) if f.is_infinite() => if f > 0.0 { "inf" } else { "-inf" }.into(),
        other => format!("{}", other.to_f64()),
    }
}

fn scalar_as_i64(s: Scalar) -> i64 {
    match s {
        Scalar::Bool(b) => b as i64,
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i64,
    }
}

/// `n` copies of `v`, in a reused buffer when the cache has one.
fn filled<T: Element>(n: usize, v: T) -> Result<Vec<T>> {
    if v == T::zero() && n * std::mem::size_of::<T>() < super::pool::MIN_BYTES {
        return Ok(vec![v; n]); // calloc
    }
    let mut out = super::pool::try_buffer::<T>(n)?;
    // Split from 128K elements: a 4 MB zeros took 39 us on one thread and
    // 20 us in torch (two threads, AMD Zen 5).
    crate::parallel::for_each_chunk_mut(&mut out, 1 << 17, |_, part| part.fill(v));
    Ok(out)
}
