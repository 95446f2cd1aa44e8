//! DLPack capsules: `Tensor.__dlpack__` / `__dlpack_device__` (export)
//! and `_C._from_dlpack(capsule)` (import), sharing memory, as torch does.
//! The structs and their ownership are `tensor::dlpack`'s; here they travel
//! in capsules: the legacy `DLManagedTensor` in one named "dltensor", the
//! versioned `DLManagedTensorVersioned` in "dltensor_versioned". A consumer
//! renames the capsule to "used_…" and owns the struct from then on; a
//! capsule that is never consumed calls the deleter when it is collected.

use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::dlpack::{
    to_dlpack, to_dlpack_versioned, DLManagedTensor, DLManagedTensorVersioned, Managed, KDL_CPU,
};
use crate::Tensor;
use pyo3::exceptions::{PyAssertionError, PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

const NAME: &CStr = c"dltensor";
const USED_NAME: &CStr = c"used_dltensor";
const NAME_V: &CStr = c"dltensor_versioned";
const USED_NAME_V: &CStr = c"used_dltensor_versioned";

/// The struct in a capsule still named "dltensor[_versioned]" (not
/// consumed), or None.
///
/// # Safety
/// `cap` is a live object (any type).
unsafe fn unconsumed(cap: *mut ffi::PyObject) -> Option<Managed> {
    // SAFETY: PyCapsule_IsValid accepts any live object; a valid capsule of
    // that name holds a struct of that kind.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
            return NonNull::new(p).map(Managed::Legacy);
        }
        if ffi::PyCapsule_IsValid(cap, NAME_V.as_ptr()) == 1 {
            let p =
                ffi::PyCapsule_GetPointer(cap, NAME_V.as_ptr()) as *mut DLManagedTensorVersioned;
            return NonNull::new(p).map(Managed::Versioned);
        }
    }
    None
}

/// Frees an unconsumed capsule's struct (a consumed one was renamed).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL on a live capsule; a capsule
    // still named "dltensor[_versioned]" holds our unconsumed struct.
    unsafe {
        if let Some(m) = unconsumed(cap) {
            m.delete();
        }
    }
}

fn export(py: Python<'_>, t: &Tensor, versioned: bool, copied: bool) -> PyResult<Py<PyAny>> {
    let (m, name) = if versioned {
        (Managed::Versioned(to_dlpack_versioned(t, copied)), NAME_V)
    } else {
        (Managed::Legacy(to_dlpack(t)), NAME)
    };
    let ptr = match m {
        Managed::Legacy(p) => p.as_ptr() as *mut c_void,
        Managed::Versioned(p) => p.as_ptr() as *mut c_void,
    };
    // SAFETY: `ptr` is a live struct of the kind `name` says; the destructor
    // frees it unless a consumer took it.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so the struct is still ours.
        unsafe { m.delete() };
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

/// A tensor sharing the memory of a DLPack capsule, which is consumed.
#[pyfunction]
fn _from_dlpack(capsule: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object (we hold it).
    let Some(m) = (unsafe { unconsumed(cap) }) else {
        return Err(PyRuntimeError::new_err(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
        ));
    };
    // SAFETY: an unconsumed capsule's struct, alive while the capsule is,
    // from a producer that keeps the DLPack contract.
    let import = unsafe { m.check() }?;
    // Consume: from here the struct is ours.
    let used = match m {
        Managed::Legacy(_) => USED_NAME,
        Managed::Versioned(_) => USED_NAME_V,
    };
    // SAFETY: a valid capsule; the new name is a static C string.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    // SAFETY: the renamed capsule no longer frees the struct and no other
    // consumer takes a "used_" capsule: it is handed over once, here.
    Ok(wrap(unsafe { import.into_tensor() }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_from_dlpack, m)?)
}
