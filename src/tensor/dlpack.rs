//! DLPack 1.0 (`dlpack.h`) both ways, sharing memory, with no Python: a
//! tensor exported as the legacy `DLManagedTensor` or the versioned
//! `DLManagedTensorVersioned`, and a tensor made over a producer's struct.
//! The Python bindings wrap these in capsules (`Tensor.__dlpack__`,
//! `from_dlpack`); a Rust program can hand them to any DLPack consumer.
//!
//! Invariants the unsafe code relies on:
//! * Export: the struct's shape/strides arrays live in one `Box` (the
//!   `manager_ctx`) together with a clone of the tensor (an `Arc` on its
//!   storage), so the data pointer stays valid until the deleter runs;
//!   ferrograd never reallocates a storage's buffer while a tensor refers
//!   to it. The deleter frees the struct and that box, and is called once.
//! * Import: [`Import::into_tensor`] takes the producer's struct over: its
//!   deleter runs when the last tensor sharing the memory is dropped. The
//!   memory covers the extent computed from shape and (non-negative)
//!   strides, per the DLPack contract; [`Managed::check`] checks alignment,
//!   and that bool bytes are 0 or 1, before anything is taken.

use crate::buffer::layout::{contiguous_strides, for_each_offset};
use crate::buffer::Element;
use crate::tensor::storage::Buf;
use crate::tensor::{Layout, Storage};
use crate::{bail, DType, Result, Tensor};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

/// DLPack's `kDLCPU`.
pub const KDL_CPU: i32 = 1;
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const FLAG_IS_COPIED: u64 = 1 << 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// A producer's struct, either kind.
#[derive(Clone, Copy, Debug)]
pub enum Managed {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
}

// ----- export -----

/// What an exported struct's `manager_ctx` owns.
struct Export {
    _tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (KDL_BOOL, 8),
        DType::U8 => (KDL_UINT, 8),
        DType::I8 => (KDL_INT, 8),
        DType::I16 => (KDL_INT, 16),
        DType::I32 => (KDL_INT, 32),
        DType::I64 => (KDL_INT, 64),
        DType::F16 => (KDL_FLOAT, 16),
        DType::BF16 => (KDL_BFLOAT, 16),
        DType::F32 => (KDL_FLOAT, 32),
        DType::F64 => (KDL_FLOAT, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The `DLTensor` of `t` and its raw `manager_ctx` (an [`Export`] box that
/// the deleter frees).
fn make_export(t: &Tensor) -> (*mut c_void, DLTensor) {
    let mut ctx = Box::new(Export {
        _tensor: t.clone(),
        shape: t.shape().iter().map(|&d| d as i64).collect(),
        strides: t.strides().iter().map(|&s| s as i64).collect(),
    });
    let dl = DLTensor {
        data: t.data_ptr() as *mut c_void,
        device: DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        ndim: t.ndim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: ctx.shape.as_mut_ptr(),
        strides: ctx.strides.as_mut_ptr(),
        byte_offset: 0,
    };
    (Box::into_raw(ctx) as *mut c_void, dl)
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    // SAFETY: `p` came from `Box::into_raw` in `to_dlpack`, and its ctx
    // from `Box::into_raw` of an `Export`; DLPack calls the deleter once.
    unsafe {
        let m = Box::from_raw(p);
        drop(Box::from_raw(m.manager_ctx as *mut Export));
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    // SAFETY: as in `delete_legacy`.
    unsafe {
        let m = Box::from_raw(p);
        drop(Box::from_raw(m.manager_ctx as *mut Export));
    }
}

/// `t` as a legacy `DLManagedTensor` sharing its memory. The caller owns
/// the struct: it must call its deleter exactly once.
pub fn to_dlpack(t: &Tensor) -> NonNull<DLManagedTensor> {
    let (manager_ctx, dl_tensor) = make_export(t);
    let m = Box::new(DLManagedTensor {
        dl_tensor,
        manager_ctx,
        deleter: Some(delete_legacy),
    });
    NonNull::from(Box::leak(m))
}

/// `t` as a DLPack 1.0 `DLManagedTensorVersioned` sharing its memory
/// (`copied` sets the flag that says it is a copy made for the consumer).
/// The caller owns the struct: it must call its deleter exactly once.
pub fn to_dlpack_versioned(t: &Tensor, copied: bool) -> NonNull<DLManagedTensorVersioned> {
    let (manager_ctx, dl_tensor) = make_export(t);
    let m = Box::new(DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 0 },
        manager_ctx,
        deleter: Some(delete_versioned),
        flags: if copied { FLAG_IS_COPIED } else { 0 },
        dl_tensor,
    });
    NonNull::from(Box::leak(m))
}

// ----- import -----

impl Managed {
    /// Runs the struct's deleter.
    ///
    /// # Safety
    /// The struct is live and owned by the caller, and nothing uses it or
    /// calls its deleter afterwards.
    pub unsafe fn delete(self) {
        // SAFETY: the caller's contract.
        unsafe {
            match self {
                Managed::Legacy(p) => {
                    if let Some(d) = (*p.as_ptr()).deleter {
                        d(p.as_ptr());
                    }
                }
                Managed::Versioned(p) => {
                    if let Some(d) = (*p.as_ptr()).deleter {
                        d(p.as_ptr());
                    }
                }
            }
        }
    }

    /// What a tensor over the struct would be, checked (version, device,
    /// dtype, sizes, alignment, bool bytes); nothing is taken over.
    ///
    /// # Safety
    /// The struct is live and follows the DLPack contract: `shape` (and
    /// `strides` when not null) hold `ndim` int64s, and `data +
    /// byte_offset` covers the extent of shape and strides.
    pub unsafe fn check(&self) -> Result<Import> {
        // SAFETY: the caller's contract.
        let dl: DLTensor = unsafe {
            match self {
                Managed::Versioned(p) => {
                    let m = p.as_ref();
                    if m.version.major > 1 {
                        bail!(
                            buffer,
                            "from_dlpack: DLPack version {}.{} is newer than the supported 1.x",
                            m.version.major,
                            m.version.minor
                        );
                    }
                    m.dl_tensor
                }
                Managed::Legacy(p) => p.as_ref().dl_tensor,
            }
        };
        if dl.device.device_type != KDL_CPU {
            bail!(
                buffer,
                "from_dlpack: ferrograd tensors live on the CPU; got DLPack device type {}",
                dl.device.device_type
            );
        }
        let dtype = from_dl_dtype(dl.dtype)?;
        let Ok(ndim) = usize::try_from(dl.ndim) else {
            bail!(value, "from_dlpack: negative ndim {}", dl.ndim);
        };
        if ndim > 0 && dl.shape.is_null() {
            bail!(
                buffer,
                "from_dlpack: a DLTensor of {ndim} dims without a shape"
            );
        }
        let read = |p: *mut i64| -> Vec<i64> {
            // SAFETY: the caller's contract: `p` holds `ndim` int64s.
            unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec()
        };
        let shape = if ndim == 0 { vec![] } else { read(dl.shape) };
        if shape.iter().any(|&d| d < 0) {
            bail!(
                buffer,
                "from_dlpack: negative sizes or strides are not supported"
            );
        }
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let strides: Vec<usize> = if ndim == 0 {
            vec![]
        } else if dl.strides.is_null() {
            contiguous_strides(&shape).to_vec()
        } else {
            let s = read(dl.strides);
            if s.iter().any(|&s| s < 0) {
                bail!(
                    buffer,
                    "from_dlpack: negative sizes or strides are not supported"
                );
            }
            s.iter().map(|&s| s as usize).collect()
        };
        let extent = Layout::span(&shape, &strides);
        let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
        if extent > 0 && !(data as usize).is_multiple_of(dtype.itemsize()) {
            bail!(buffer, "from_dlpack: the data is not aligned for its dtype");
        }
        if dtype == DType::Bool && extent > 0 {
            let mut bad = false;
            for_each_offset(&shape, &strides, 0, |o| {
                // SAFETY: o < extent, inside the producer's memory.
                bad |= unsafe { *data.add(o) } > 1;
            });
            if bad {
                bail!(
                    value,
                    "from_dlpack: a bool tensor holds bytes other than 0 and 1"
                );
            }
        }
        Ok(Import {
            managed: *self,
            dtype,
            data,
            extent,
            layout: Layout {
                shape: shape.into_iter().collect(),
                strides: strides.into_iter().collect(),
                offset: 0,
            },
        })
    }
}

fn from_dl_dtype(d: DLDataType) -> Result<DType> {
    Ok(match (d.code, d.bits, d.lanes) {
        (KDL_FLOAT, 32, 1) => DType::F32,
        (KDL_FLOAT, 64, 1) => DType::F64,
        (KDL_FLOAT, 16, 1) => DType::F16,
        (KDL_BFLOAT, 16, 1) => DType::BF16,
        (KDL_INT, 64, 1) => DType::I64,
        (KDL_INT, 32, 1) => DType::I32,
        (KDL_INT, 16, 1) => DType::I16,
        (KDL_INT, 8, 1) => DType::I8,
        (KDL_UINT, 8, 1) => DType::U8,
        (KDL_BOOL, 8, 1) => DType::Bool,
        _ => bail!(
            type_error,
            "from_dlpack: ferrograd has no dtype for DLPack type code={} bits={} lanes={} (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8 and bool are supported)",
            d.code,
            d.bits,
            d.lanes
        ),
    })
}

/// A checked producer's struct ([`Managed::check`]), not yet taken over.
pub struct Import {
    managed: Managed,
    dtype: DType,
    data: *mut u8,
    extent: usize,
    layout: Layout,
}

/// The producer's struct inside a storage: runs its deleter when the last
/// tensor sharing the memory goes.
struct Owner(Managed);

// SAFETY: DLPack deleters may be called from any thread (producers that
// need a lock take it in their deleter), and `Owner` only calls it on drop.
unsafe impl Send for Owner {}
unsafe impl Sync for Owner {}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: the struct was handed over in `into_tensor`; its deleter
        // runs exactly once, here.
        unsafe { self.0.delete() }
    }
}

impl Import {
    /// The tensor over the producer's memory, which takes the struct over
    /// (its deleter runs when the last tensor sharing the memory goes).
    ///
    /// # Safety
    /// The struct is still live, owned by the caller, and from here on
    /// nobody else uses it or calls its deleter.
    pub unsafe fn into_tensor(self) -> Tensor {
        let owner: Box<dyn Send + Sync> = Box::new(Owner(self.managed));
        fn typed<T>(p: *mut u8, extent: usize) -> NonNull<T> {
            if extent == 0 {
                NonNull::dangling()
            } else {
                NonNull::new(p as *mut T).unwrap_or(NonNull::dangling())
            }
        }
        let (data, extent) = (self.data, self.extent);
        // SAFETY: `check` found `data` covering `extent` aligned elements
        // of `dtype` (the caller's contract there), valid while `owner`
        // (the producer's struct) lives; bools were checked to be 0/1; any
        // bit pattern is a valid integer or float.
        let storage = unsafe {
            crate::dispatch_all!(self.dtype, T => T::wrap_buf(Buf::foreign(
                typed::<T>(data, extent),
                extent,
                owner,
            )))
        };
        Tensor::from_storage(Arc::new(Storage::new(storage)), self.layout)
    }
}

/// A tensor sharing the memory of a producer's DLPack struct, which it
/// takes over; on an error nothing is taken (the caller still owns it).
///
/// # Safety
/// The struct is live, owned by the caller, and follows the DLPack
/// contract (see [`Managed::check`]); on success nobody else uses it or
/// calls its deleter afterwards.
pub unsafe fn from_dlpack(m: Managed) -> Result<Tensor> {
    // SAFETY: the caller's contract.
    unsafe { Ok(m.check()?.into_tensor()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_shares_memory_and_runs_the_deleter_once() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let tt = t.transpose(0, 1).unwrap();
        for versioned in [false, true] {
            let m = if versioned {
                Managed::Versioned(to_dlpack_versioned(&tt, false))
            } else {
                Managed::Legacy(to_dlpack(&tt))
            };
            // SAFETY: a struct just exported, owned here and handed over.
            let back = unsafe { from_dlpack(m) }.unwrap();
            assert_eq!(back.shape(), &[3, 2]);
            assert_eq!(back.strides(), tt.strides());
            assert_eq!(back.data_ptr(), tt.data_ptr());
            assert_eq!(back.to_vec::<f32>(), tt.to_vec::<f32>());
            // the export holds a clone of `tt` until the tensor over it goes
            assert!(Arc::strong_count(t.storage()) >= 2);
            drop(back);
        }
        assert_eq!(Arc::strong_count(t.storage()), 2); // t and tt
    }

    #[test]
    fn a_refused_struct_is_left_to_its_owner() {
        let t = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        let p = to_dlpack(&t);
        // SAFETY: the struct is ours until `delete` below.
        unsafe {
            (*p.as_ptr()).dl_tensor.device.device_type = 2; // kDLCUDA
            let e = from_dlpack(Managed::Legacy(p)).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::Buffer);
            (*p.as_ptr()).dl_tensor.dtype.lanes = 4;
            (*p.as_ptr()).dl_tensor.device.device_type = KDL_CPU;
            let e = from_dlpack(Managed::Legacy(p)).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::Type);
            (*p.as_ptr()).dl_tensor.dtype.lanes = 1;
            let shape = (*p.as_ptr()).dl_tensor.shape;
            (*p.as_ptr()).dl_tensor.shape = std::ptr::null_mut();
            let e = from_dlpack(Managed::Legacy(p)).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::Buffer);
            (*p.as_ptr()).dl_tensor.shape = shape;
            Managed::Legacy(p).delete();
        }
        assert_eq!(Arc::strong_count(t.storage()), 1);
    }
}
