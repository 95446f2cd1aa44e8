//! Tensor constructors.

use super::{DType, Element, Layout, Scalar, Storage, StorageData, Tensor};
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
        debug_assert_eq!(data.len(), shape.iter().product::<usize>());
        Self::from_storage(Arc::new(Storage::new(data)), Layout::contiguous(shape))
    }
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Tensor {
        let n = shape.iter().product();
        let data = match dtype {
            DType::Bool => {
                StorageData::Bool(super::storage::Buf::Owned(vec![value.to_f64() != 0.0; n]))
            }
            DType::I64 => i64::wrap(vec![scalar_as_i64(value); n]),
            DType::F32 => f32::wrap(vec![value.to_f64() as f32; n]),
            DType::F64 => f64::wrap(vec![value.to_f64(); n]),
        };
        Self::from_data(data, shape)
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
    /// `start, start+step, ...` below `end` (torch.arange).
    pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if st == 0.0 {
            bail!(runtime, "step must be nonzero");
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            bail!(
                runtime,
                "upper bound and larger bound inconsistent with step sign"
            );
        }
        let n = ((e - s) / st).ceil().max(0.0) as usize;
        Ok(match dtype {
            DType::I64 => {
                let (s, st) = (scalar_as_i64(start), scalar_as_i64(step));
                Self::from_vec((0..n as i64).map(|i| s + i * st).collect::<Vec<_>>(), &[n])?
            }
            DType::F32 => Self::from_vec(
                (0..n)
                    .map(|i| (s + i as f64 * st) as f32)
                    .collect::<Vec<_>>(),
                &[n],
            )?,
            DType::F64 => {
                Self::from_vec((0..n).map(|i| s + i as f64 * st).collect::<Vec<_>>(), &[n])?
            }
            DType::Bool => bail!(runtime, "\"arange_cpu\" not implemented for 'Bool'"),
        })
    }
    /// `steps` evenly spaced values from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        let step = if steps > 1 {
            (end - start) / (steps - 1) as f64
        } else {
            0.0
        };
        let half = steps / 2;
        // torch fills the second half backwards from `end` for symmetry.
        let vals: Vec<f64> = (0..steps)
            .map(|i| {
                if i < half {
                    start + step * i as f64
                } else {
                    end - step * (steps - 1 - i) as f64
                }
            })
            .collect();
        Tensor::from_vec(vals, &[steps])?.to_dtype(dtype)
    }
    pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
        let mut v = vec![0.0f64; n * m];
        for i in 0..n.min(m) {
            v[i * m + i] = 1.0;
        }
        Tensor::from_vec(v, &[n, m])?.to_dtype(dtype)
    }
}

fn scalar_as_i64(s: Scalar) -> i64 {
    match s {
        Scalar::Bool(b) => b as i64,
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i64,
    }
}
