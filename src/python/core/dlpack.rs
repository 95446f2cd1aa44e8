//! DLPack both ways: `Tensor.__dlpack__` / `__dlpack_device__` (export) and
//! `_C._from_dlpack(capsule)` (import), sharing memory, as torch does.
//!
//! The C structs are DLPack 1.0's (`dlpack.h`): the legacy
//! `DLManagedTensor` in a capsule named "dltensor" and the versioned
//! `DLManagedTensorVersioned` in "dltensor_versioned". A consumer renames
//! the capsule to "used_…" and owns the struct from then on; a capsule that
//! is never consumed calls the deleter when it is collected.
//!
//! Invariants the unsafe code relies on:
//! * Export: the struct and its shape/strides arrays live in one `Box`
//!   together with a clone of the tensor (an `Arc` on its storage), so the
//!   data pointer stays valid until the deleter runs; ferrograd never
//!   reallocates a storage's buffer while a tensor refers to it. The deleter
//!   frees that box exactly once (a consumer calls it once; the capsule
//!   destructor calls it only when the capsule was not consumed).
//! * Import: after the capsule is validated it is renamed, so the struct is
//!   ours; the producer's deleter runs when the last tensor sharing the
//!   memory is dropped (the `Owner` below). The memory covers the extent
//!   computed from shape and (non-negative) strides, per the DLPack
//!   contract; alignment is checked, and bool bytes are checked to be 0/1.

use crate::buffer::Element;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::storage::Buf;
use crate::tensor::{Layout, Storage};
use crate::{DType, Tensor};
use pyo3::exceptions::{
    PyAssertionError, PyBufferError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::Arc;

const KDL_CPU: i32 = 1;
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;
const FLAG_IS_COPIED: u64 = 1 << 1;

const NAME: &CStr = c"dltensor";
const USED_NAME: &CStr = c"used_dltensor";
const NAME_V: &CStr = c"dltensor_versioned";
const USED_NAME_V: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
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

fn make_export(t: &Tensor) -> (Box<Export>, DLTensor) {
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
    (ctx, dl)
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    // SAFETY: `p` came from `Box::into_raw` in `export`, and its ctx from
    // `Box::into_raw` of an `Export`; DLPack calls the deleter once.
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

/// Frees an unconsumed capsule's struct (a consumed one was renamed).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL on a live capsule; a capsule
    // still named "dltensor[_versioned]" holds our unconsumed struct.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*p).deleter {
                d(p);
            }
        } else if ffi::PyCapsule_IsValid(cap, NAME_V.as_ptr()) == 1 {
            let p =
                ffi::PyCapsule_GetPointer(cap, NAME_V.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = (*p).deleter {
                d(p);
            }
        }
    }
}

fn export(py: Python<'_>, t: &Tensor, versioned: bool, copied: bool) -> PyResult<Py<PyAny>> {
    let (ctx, dl_tensor) = make_export(t);
    let ctx = Box::into_raw(ctx) as *mut c_void;
    let (ptr, name) = if versioned {
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ctx,
            deleter: Some(delete_versioned),
            flags: if copied { FLAG_IS_COPIED } else { 0 },
            dl_tensor,
        });
        (Box::into_raw(m) as *mut c_void, NAME_V)
    } else {
        let m = Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx: ctx,
            deleter: Some(delete_legacy),
        });
        (Box::into_raw(m) as *mut c_void, NAME)
    };
    // SAFETY: `ptr` is a live struct of the kind `name` says; the destructor
    // frees it unless a consumer took it.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so the struct is still ours.
        unsafe {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned)
            } else {
                delete_legacy(ptr as *mut DLManagedTensor)
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference returned by PyCapsule_New.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

#[pymethods]
impl PyTensor {
    /// A DLPack capsule sharing this tensor's memory (a copy with
    /// `copy=True`); versioned (DLPack 1.0) when `max_version >= (1, 0)`.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(i64, i64)>,
        dl_device: Option<(i64, i64)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let t = &self.inner;
        if t.requires_grad() {
            return Err(PyBufferError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            if !s.is_exact_instance_of::<pyo3::types::PyInt>() {
                return Err(PyTypeError::new_err("stream must be ``int`` or ``none``"));
            }
            if s.extract::<i64>().ok() != Some(-1) {
                return Err(PyAssertionError::new_err("stream should be None on cpu."));
            }
        }
        if let Some(d) = dl_device {
            if d != (KDL_CPU as i64, 0) {
                return Err(PyBufferError::new_err(format!(
                    "ferrograd can only export to the CPU (device (1, 0)), not to device {d:?}"
                )));
            }
        }
        let versioned = max_version.is_some_and(|v| v.0 >= 1);
        if copy == Some(true) {
            let c = Tensor::zeros(t.shape(), t.dtype());
            c.copy_(&t.detach())?;
            return export(py, &c, versioned, true);
        }
        export(py, t, versioned, false)
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }
}

// ----- import -----

/// The producer's struct; runs its deleter when the last tensor sharing the
/// memory goes.
struct Owner {
    ptr: *mut c_void,
    versioned: bool,
}

// SAFETY: DLPack deleters may be called from any thread (producers that need
// the GIL take it in their deleter), and `Owner` only calls it on drop.
unsafe impl Send for Owner {}
unsafe impl Sync for Owner {}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: `ptr` is the struct we took from a renamed capsule; its
        // deleter runs exactly once, here.
        unsafe {
            if self.versioned {
                let p = self.ptr as *mut DLManagedTensorVersioned;
                if let Some(d) = (*p).deleter {
                    d(p);
                }
            } else {
                let p = self.ptr as *mut DLManagedTensor;
                if let Some(d) = (*p).deleter {
                    d(p);
                }
            }
        }
    }
}

fn from_dl_dtype(d: DLDataType) -> PyResult<DType> {
    match (d.code, d.bits, d.lanes) {
        (KDL_FLOAT, 32, 1) => Ok(DType::F32),
        (KDL_FLOAT, 64, 1) => Ok(DType::F64),
        (KDL_FLOAT, 16, 1) => Ok(DType::F16),
        (KDL_BFLOAT, 16, 1) => Ok(DType::BF16),
        (KDL_INT, 64, 1) => Ok(DType::I64),
        (KDL_INT, 32, 1) => Ok(DType::I32),
        (KDL_INT, 16, 1) => Ok(DType::I16),
        (KDL_INT, 8, 1) => Ok(DType::I8),
        (KDL_UINT, 8, 1) => Ok(DType::U8),
        (KDL_BOOL, 8, 1) => Ok(DType::Bool),
        _ => Err(PyTypeError::new_err(format!(
            "from_dlpack: ferrograd has no dtype for DLPack type code={} bits={} lanes={} (float32, float64, int8, int16, int32, int64, uint8 and bool are supported)",
            d.code, d.bits, d.lanes
        ))),
    }
}

/// A tensor sharing the memory of a DLPack capsule, which is consumed.
#[pyfunction]
fn _from_dlpack(capsule: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object; PyCapsule_IsValid accepts any object.
    let versioned = unsafe { ffi::PyCapsule_IsValid(cap, NAME_V.as_ptr()) } == 1;
    let legacy = unsafe { ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) } == 1;
    if !versioned && !legacy {
        return Err(PyRuntimeError::new_err(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
        ));
    }
    let name = if versioned { NAME_V } else { NAME };
    // SAFETY: validated above: the capsule holds an unconsumed struct of
    // that kind, alive while the capsule is (we hold it).
    let ptr = unsafe { ffi::PyCapsule_GetPointer(cap, name.as_ptr()) };
    let dl: DLTensor = unsafe {
        if versioned {
            let m = &*(ptr as *const DLManagedTensorVersioned);
            if m.version.major > 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: DLPack version {}.{} is newer than the supported 1.x",
                    m.version.major, m.version.minor
                )));
            }
            m.dl_tensor
        } else {
            (*(ptr as *const DLManagedTensor)).dl_tensor
        }
    };
    if dl.device.device_type != KDL_CPU {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: ferrograd tensors live on the CPU; got DLPack device type {}",
            dl.device.device_type
        )));
    }
    let dtype = from_dl_dtype(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim).map_err(|_| PyValueError::new_err("negative ndim"))?;
    // SAFETY: DLPack guarantees `shape` (and `strides` when non-null) point
    // at `ndim` int64s while the struct is alive.
    let shape: Vec<i64> = if ndim == 0 {
        vec![]
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
    };
    let strides: Vec<i64> = if ndim == 0 {
        vec![]
    } else if dl.strides.is_null() {
        crate::buffer::layout::contiguous_strides(
            &shape.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>(),
        )
        .iter()
        .map(|&s| s as i64)
        .collect()
    } else {
        unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec()
    };
    if shape.iter().any(|&d| d < 0) || strides.iter().any(|&s| s < 0) {
        return Err(PyBufferError::new_err(
            "from_dlpack: negative sizes or strides are not supported",
        ));
    }
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let strides: Vec<usize> = strides.iter().map(|&s| s as usize).collect();
    let extent = Layout::span(&shape, &strides);
    let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    if extent > 0 && !(data as usize).is_multiple_of(dtype.itemsize()) {
        return Err(PyBufferError::new_err(
            "from_dlpack: the data is not aligned for its dtype",
        ));
    }
    if dtype == DType::Bool && extent > 0 {
        let mut bad = false;
        crate::buffer::layout::for_each_offset(&shape, &strides, 0, |o| {
            // SAFETY: o < extent, inside the producer's memory.
            bad |= unsafe { *data.add(o) } > 1;
        });
        if bad {
            return Err(PyValueError::new_err(
                "from_dlpack: a bool tensor holds bytes other than 0 and 1",
            ));
        }
    }
    // Consume: from here the struct is ours (the Owner runs its deleter).
    let used = if versioned { USED_NAME_V } else { USED_NAME };
    // SAFETY: a valid capsule; the new name is a static C string.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let owner: Box<dyn Send + Sync> = Box::new(Owner { ptr, versioned });
    fn typed<T>(p: *mut u8, extent: usize) -> NonNull<T> {
        if extent == 0 {
            NonNull::dangling()
        } else {
            NonNull::new(p as *mut T).unwrap_or(NonNull::dangling())
        }
    }
    // SAFETY: see the module note: `data` covers `extent` aligned elements
    // of `dtype`, valid while `owner` (the producer's struct) lives; bools
    // were checked to be 0/1; any bit pattern is a valid integer or float.
    let storage = unsafe {
        crate::dispatch_all!(dtype, T => T::wrap_buf(Buf::foreign(
            typed::<T>(data, extent),
            extent,
            owner,
        )))
    };
    Ok(wrap(Tensor::from_storage(
        Arc::new(Storage::new(storage)),
        Layout {
            shape: shape.into_iter().collect(),
            strides: strides.into_iter().collect(),
            offset: 0,
        },
    )))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_dlpack, m)?)
}
