//! NumPy interop: `from_numpy` (zero-copy), `Tensor.numpy()` (zero-copy),
//! `tensor(ndarray)` (copy), NumPy scalars, `tolist`, `__array__`.
//!
//! Memory shared with NumPy is read and written by both sides without
//! ferrograd's storage lock, exactly as in torch: concurrent writes from
//! NumPy and from ferrograd ops on the same memory are the caller's race.
//!
//! dtype mapping: float32, float64, int8, int16, int32, int64, uint8 and
//! bool are ferrograd dtypes and convert exactly. `tensor()` also takes
//! uint16..uint64, which become int64 (uint64 values above 2**63 - 1 wrap),
//! and float16, which becomes float32 (torch would keep them; ferrograd has
//! no such types yet). `from_numpy` only shares memory, so it takes only the
//! exact dtypes.

use crate::buffer::Element;
use crate::python::core::bind::bind_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::storage::Buf;
use crate::tensor::Scalar;
use crate::tensor::{Layout, Storage};
use crate::{DType, Tensor};
use numpy::npyffi::{self, npy_intp, NPY_ARRAY_ALIGNED, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyType};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------
// detection
// ---------------------------------------------------------------------------

static NUMPY_SEEN: AtomicBool = AtomicBool::new(false);

/// Whether `numpy` has been imported. Only then can an object be a NumPy
/// array or scalar; checking first keeps the NumPy C API (which would panic
/// if NumPy were missing) out of reach in a NumPy-free process.
pub fn numpy_loaded(py: Python<'_>) -> bool {
    if NUMPY_SEEN.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: PyImport_GetModule takes a valid str object and returns a new
    // reference or NULL (not imported / error, which we clear); attached.
    let loaded = unsafe {
        let name = pyo3::intern!(py, "numpy");
        let m = pyo3::ffi::PyImport_GetModule(name.as_ptr());
        if m.is_null() {
            pyo3::ffi::PyErr_Clear();
            false
        } else {
            pyo3::ffi::Py_DecRef(m);
            true
        }
    };
    if loaded {
        NUMPY_SEEN.store(true, Ordering::Relaxed);
    }
    loaded
}

pub fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    numpy_loaded(obj.py()) && obj.cast::<PyUntypedArray>().is_ok()
}

pub fn is_object_array(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyUntypedArray>()
        .map(|a| a.dtype().kind() == b'O')
        .unwrap_or(false)
}

static NP_GENERIC: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// How a NumPy dtype maps to ours.
enum Kind {
    /// A ferrograd dtype, bit for bit.
    Exact(DType),
    /// Convertible: becomes this dtype after NumPy's `astype(name)`.
    Convert(DType, &'static str),
    Unsupported,
}

fn classify_kind(kind: u8, itemsize: usize) -> Kind {
    match (kind, itemsize) {
        (b'b', 1) => Kind::Exact(DType::Bool),
        (b'u', 1) => Kind::Exact(DType::U8),
        (b'i', 1) => Kind::Exact(DType::I8),
        (b'i', 2) => Kind::Exact(DType::I16),
        (b'i', 4) => Kind::Exact(DType::I32),
        (b'i', 8) => Kind::Exact(DType::I64),
        (b'i', _) | (b'u', _) => Kind::Convert(DType::I64, "int64"),
        (b'f', 4) => Kind::Exact(DType::F32),
        (b'f', 8) => Kind::Exact(DType::F64),
        (b'f', 2) => Kind::Exact(DType::F16),
        _ => Kind::Unsupported,
    }
}

fn classify(descr: &Bound<'_, PyArrayDescr>) -> Kind {
    classify_kind(descr.kind(), descr.itemsize())
}

fn np_type_name(descr: &Bound<'_, PyArrayDescr>) -> String {
    descr
        .typeobj()
        .name()
        .map(|n| format!("numpy.{n}"))
        .unwrap_or_else(|_| "unknown".into())
}

/// A NumPy scalar (`np.float64(1.5)`, `np.int32(3)`, `np.bool_(True)`) or a
/// 0-d array, as a value and the dtype torch infers for it. `None` if `obj`
/// is neither (or NumPy is not loaded).
pub(crate) fn numpy_scalar(
    obj: &Bound<'_, PyAny>,
    numpy: bool,
) -> PyResult<Option<(Scalar, DType)>> {
    if !numpy {
        return Ok(None);
    }
    let py = obj.py();
    let (kind, itemsize) = if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        if arr.ndim() != 0 {
            return Ok(None);
        }
        let d = arr.dtype();
        (d.kind(), d.itemsize())
    } else {
        let generic = NP_GENERIC.import(py, "numpy", "generic")?;
        if !obj.is_instance(generic)? {
            return Ok(None);
        }
        let d = obj.getattr(pyo3::intern!(py, "dtype"))?;
        let d = d.cast::<PyArrayDescr>()?;
        (d.kind(), d.itemsize())
    };
    let dtype = match classify_kind(kind, itemsize) {
        Kind::Exact(d) | Kind::Convert(d, _) => d,
        Kind::Unsupported if kind == b'f' => DType::F64, // longdouble
        Kind::Unsupported if kind == b'c' => {
            return Err(PyTypeError::new_err(
                "ferrograd has no complex dtype: can't make a tensor of complex numbers",
            ))
        }
        Kind::Unsupported => return Ok(None),
    };
    let val = match dtype {
        DType::Bool => Scalar::Bool(obj.is_truthy()?),
        d if d.is_integral() => {
            let i = obj.call_method0(pyo3::intern!(py, "item"))?;
            match i.extract::<i64>() {
                Ok(v) => Scalar::Int(v),
                // uint64 above i64::MAX wraps, as the array conversion does.
                Err(_) => Scalar::Int(i.extract::<u64>()? as i64),
            }
        }
        _ => Scalar::Float(
            obj.call_method0(pyo3::intern!(py, "item"))?
                .extract::<f64>()?,
        ),
    };
    Ok(Some((val, dtype)))
}

// ---------------------------------------------------------------------------
// ndarray -> Tensor
// ---------------------------------------------------------------------------

/// The array's element strides, if every byte stride is a non-negative
/// multiple of the item size.
fn element_strides(arr: &Bound<'_, PyUntypedArray>, itemsize: usize) -> PyResult<Vec<usize>> {
    let mut out = Vec::with_capacity(arr.ndim());
    for &s in arr.strides() {
        if s < 0 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        if !(s as usize).is_multiple_of(itemsize) {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
            ));
        }
        out.push(s as usize / itemsize);
    }
    Ok(out)
}

fn check_byte_order(descr: &Bound<'_, PyArrayDescr>) -> PyResult<()> {
    if descr.is_native_byteorder() == Some(false) {
        return Err(PyValueError::new_err(
            "given numpy array has byte order different from the native byte order. Conversion between byte orders is currently not supported.",
        ));
    }
    Ok(())
}

/// A typed non-null pointer for a foreign buffer of `len` elements.
fn typed_ptr<T>(ptr: *mut u8, len: usize) -> PyResult<NonNull<T>> {
    if len == 0 {
        return Ok(NonNull::dangling());
    }
    if !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(PyValueError::new_err(
            "given numpy array is not aligned for its dtype; copy it (array.copy()) first",
        ));
    }
    NonNull::new(ptr as *mut T)
        .ok_or_else(|| PyRuntimeError::new_err("numpy array has a NULL data pointer"))
}

/// A tensor viewing `arr`'s memory, keeping `arr` alive. `dtype` must be
/// the exact ferrograd dtype of the array's native-order elements.
fn borrow_array(arr: &Bound<'_, PyUntypedArray>, dtype: DType) -> PyResult<Tensor> {
    let descr = arr.dtype();
    check_byte_order(&descr)?;
    let itemsize = dtype.itemsize();
    debug_assert_eq!(descr.itemsize(), itemsize);
    let shape: Vec<usize> = arr.shape().to_vec();
    let strides = element_strides(arr, itemsize)?;
    let extent = Layout::span(&shape, &strides);
    // SAFETY: `as_array_ptr` is a live PyArrayObject (we hold `arr`).
    let data = unsafe { (*npyffi::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).data } as *mut u8;
    if dtype == DType::Bool && extent > 0 {
        // Rust's bool admits only 0 and 1; NumPy bool arrays hold only those
        // unless someone wrote other bytes through a reinterpreting view.
        let mut bad = false;
        crate::buffer::layout::for_each_offset(&shape, &strides, 0, |o| {
            // SAFETY: o < extent, inside the array's memory.
            bad |= unsafe { *data.add(o) } > 1;
        });
        if bad {
            return Err(PyValueError::new_err(
                "numpy bool array holds bytes other than 0 and 1",
            ));
        }
    }
    let owner: Box<dyn Send + Sync> = Box::new(arr.clone().into_any().unbind());
    // SAFETY: `data` points at the array's memory, which covers `extent`
    // elements of `dtype` (non-negative element strides, computed above) and
    // stays allocated while the array object is alive; the owner box keeps
    // it alive as long as the buffer. Alignment is checked by `typed_ptr`.
    // Every bit pattern is a valid float or integer; bools were checked above.
    let storage = unsafe {
        crate::dispatch_all!(dtype, T => T::wrap_buf(Buf::foreign(
            typed_ptr::<T>(data, extent)?,
            extent,
            owner,
        )))
    };
    Ok(Tensor::from_storage(
        Arc::new(Storage::new(storage)),
        Layout {
            shape: shape.into_iter().collect(),
            strides: strides.into_iter().collect(),
            offset: 0,
        },
    ))
}

fn is_writeable(arr: &Bound<'_, PyUntypedArray>) -> bool {
    // SAFETY: a live PyArrayObject.
    unsafe {
        (*npyffi::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).flags & NPY_ARRAY_WRITEABLE != 0
    }
}

fn is_aligned(arr: &Bound<'_, PyUntypedArray>) -> bool {
    // SAFETY: a live PyArrayObject.
    unsafe { (*npyffi::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).flags & NPY_ARRAY_ALIGNED != 0 }
}

fn unsupported_from_numpy(descr: &Bound<'_, PyArrayDescr>) -> PyErr {
    PyTypeError::new_err(format!(
        "can't convert np.ndarray of type {}. The only supported types are: float64, float32, int64, and bool.",
        np_type_name(descr)
    ))
}

fn unsupported_tensor(descr: &Bound<'_, PyArrayDescr>) -> PyErr {
    PyTypeError::new_err(format!(
        "can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool.",
        np_type_name(descr)
    ))
}

/// A copy of a NumPy array as a new tensor (`tensor(ndarray)`).
pub fn tensor_from_ndarray(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let arr = obj.cast::<PyUntypedArray>()?;
    let descr = arr.dtype();
    check_byte_order(&descr)?;
    let (mapped, arr) = match classify(&descr) {
        Kind::Exact(d) => (d, arr.clone()),
        Kind::Convert(d, name) => {
            element_strides(arr, descr.itemsize())?; // torch's stride errors first
            let converted = arr.call_method1(pyo3::intern!(obj.py(), "astype"), (name,))?;
            (d, converted.cast_into::<PyUntypedArray>()?)
        }
        Kind::Unsupported => return Err(unsupported_tensor(&descr)),
    };
    element_strides(&arr, mapped.itemsize())?;
    let arr = if is_aligned(&arr) {
        arr
    } else {
        arr.call_method0(pyo3::intern!(obj.py(), "copy"))?
            .cast_into::<PyUntypedArray>()?
    };
    let view = borrow_array(&arr, mapped)?;
    let target = dtype.unwrap_or(mapped);
    // Copy out so the tensor owns its memory and the array can go.
    Ok(
        crate::dispatch_all!(target, T => Tensor::from(crate::kernels::copy::contiguous_as::<T>(&view)?)),
    )
}

/// A tensor sharing `obj`'s memory if `obj` is a writeable NumPy array of an
/// exact dtype matching `dtype` (for `as_tensor`); `None` otherwise.
pub fn share_ndarray(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Option<Tensor>> {
    if !is_ndarray(obj) {
        return Ok(None);
    }
    let arr = obj.cast::<PyUntypedArray>()?;
    let descr = arr.dtype();
    match classify(&descr) {
        Kind::Exact(d) if dtype.is_none_or(|x| x == d) && is_writeable(arr) && is_aligned(arr) => {
            Ok(Some(borrow_array(arr, d)?))
        }
        _ => Ok(None),
    }
}

bind_functions! { register_functions:
    /// `from_numpy(ndarray)`: a tensor sharing the array's memory. Writes on
    /// either side are visible on the other; the array stays alive as long as
    /// the tensor (or any view of it) does.
    ///
    /// A read-only array is copied instead, with a UserWarning: ferrograd's
    /// in-place ops would otherwise write into memory NumPy promised not to
    /// change (torch shares it and calls such writes undefined behaviour).
    fn from_numpy(py: Python<'_>, ndarray: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        if !is_ndarray(ndarray) {
            return Err(PyTypeError::new_err(format!(
                "expected np.ndarray (got {})",
                ndarray.get_type().name()?
            )));
        }
        let arr = ndarray.cast::<PyUntypedArray>()?;
        let descr = arr.dtype();
        let d = match classify(&descr) {
            Kind::Exact(d) => d,
            _ => return Err(unsupported_from_numpy(&descr)),
        };
        check_byte_order(&descr)?;
        if !is_writeable(arr) {
            element_strides(arr, d.itemsize())?;
            PyErr::warn(
                py,
                &py.get_type::<PyUserWarning>(),
                c"The given NumPy array is not writable; ferrograd copied it, so the tensor does not share its memory. Make the array writable (or copy it) to share memory.",
                1,
            )?;
            return Ok(wrap(tensor_from_ndarray(ndarray, None)?));
        }
        Ok(wrap(borrow_array(arr, d)?))
    }
}

// ---------------------------------------------------------------------------
// Tensor -> ndarray
// ---------------------------------------------------------------------------

/// Keeps a tensor's storage alive as the `base` of a NumPy array viewing it.
#[pyclass(name = "_StorageOwner", module = "ferrograd._C", frozen)]
struct StorageOwner {
    _storage: Arc<Storage>,
}

/// NumPy's descriptor for `d`: float16 is NumPy's `half`; NumPy has no
/// bfloat16, and torch's error says so.
fn descr_for(py: Python<'_>, d: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    match d {
        DType::F16 => PyArrayDescr::new(py, "float16"),
        DType::BF16 => Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16")),
        d => {
            let descr = || -> crate::Result<_> {
                Ok(crate::dispatch_computed!(d, T => numpy::dtype::<T>(py)))
            };
            Ok(descr()?)
        }
    }
}

/// A writeable NumPy array viewing `t`'s memory with `t`'s strides.
pub fn tensor_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    py.import("numpy")?; // a clean ImportError instead of a C-API panic
    let descr = descr_for(py, t.dtype())?;
    let itemsize = t.dtype().itemsize();
    let mut dims: Vec<npy_intp> = t.shape().iter().map(|&d| d as npy_intp).collect();
    let mut strides: Vec<npy_intp> = t
        .strides()
        .iter()
        .map(|&s| (s * itemsize) as npy_intp)
        .collect();
    let storage = t.storage().clone();
    let data = (storage.data_ptr() + t.storage_offset() * itemsize) as *mut std::ffi::c_void;
    let owner = Bound::new(py, StorageOwner { _storage: storage })?;
    // SAFETY: the C API is initialised (numpy imported). `descr` is a new
    // reference that NewFromDescr steals. dims/strides have `ndim` entries
    // and describe memory inside the storage (a valid tensor layout), which
    // stays alive while `owner` (set as the array's base) lives: storages
    // never reallocate their buffer.
    unsafe {
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as std::ffi::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data,
            NPY_ARRAY_WRITEABLE,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        // SetBaseObject steals the owner reference, also on failure.
        if PY_ARRAY_API.PyArray_SetBaseObject(
            py,
            arr.as_ptr() as *mut npyffi::PyArrayObject,
            owner.into_ptr(),
        ) < 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

fn nested_list<'py, T: Copy>(
    py: Python<'py>,
    vals: &[T],
    shape: &[usize],
    conv: &dyn Fn(Python<'py>, T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if shape.is_empty() {
        return conv(py, vals[0]);
    }
    let inner: usize = shape[1..].iter().product();
    let items = (0..shape[0])
        .map(|i| nested_list(py, &vals[i * inner..(i + 1) * inner], &shape[1..], conv))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.into_any())
}

#[pymethods]
impl PyTensor {
    /// A NumPy array sharing this tensor's memory (torch's `Tensor.numpy`).
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        if !force && self.inner.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        tensor_to_numpy(py, &self.inner)
    }

    /// The values as (nested lists of) Python numbers.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = &self.inner;
        let shape = t.shape().to_vec();
        match t.dtype() {
            DType::Bool => nested_list(py, &t.to_vec::<bool>(), &shape, &|py, v| {
                Ok(pyo3::types::PyBool::new(py, v).to_owned().into_any())
            }),
            d if d.is_integral() => nested_list(py, &t.to_vec::<i64>(), &shape, &|py, v| {
                Ok(v.into_pyobject(py)?.into_any())
            }),
            _ => nested_list(py, &t.to_vec::<f64>(), &shape, &|py, v| {
                Ok(v.into_pyobject(py)?.into_any())
            }),
        }
    }

    /// NumPy's array protocol: `np.asarray(t)` shares memory.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut arr = self.numpy(py, false)?;
        if let Some(d) = dtype.filter(|d| !d.is_none()) {
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item("copy", false)?;
            arr = arr.call_method("astype", (d,), Some(&kw))?;
        }
        if copy == Some(true) {
            arr = arr.call_method0("copy")?;
        }
        Ok(arr)
    }

    /// NumPy ufuncs applied to a tensor give a tensor back.
    #[pyo3(signature = (array, context=None, return_scalar=false))]
    fn __array_wrap__(
        &self,
        py: Python<'_>,
        array: &Bound<'_, PyAny>,
        context: Option<&Bound<'_, PyAny>>,
        return_scalar: bool,
    ) -> PyResult<PyTensor> {
        let _ = (context, return_scalar);
        from_numpy(py, array)
    }

    /// Makes `ndarray <op> tensor` defer to the tensor's reflected operator.
    #[classattr]
    fn __array_priority__() -> i32 {
        1000
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    m.add_class::<StorageOwner>()?;
    Ok(())
}
