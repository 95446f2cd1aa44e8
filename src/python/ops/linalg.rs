//! Matrix products: `@`, `matmul`, `mm`, `bmm`, `mv`, `dot`, `outer`, as
//! Tensor methods and module functions.

use crate::python::core::args::tensor_arg;
use crate::python::core::batched;
use crate::python::core::bind::add_functions;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::Tensor;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// Products at least this large (elements of both operands) run with the
/// GIL released.
const DETACH_NUMEL: usize = 1 << 16;

fn run(
    py: Python<'_>,
    a: &Tensor,
    b: &Tensor,
    f: fn(&Tensor, &Tensor) -> crate::Result<Tensor>,
) -> PyResult<PyTensor> {
    let r = if a.numel() + b.numel() >= DETACH_NUMEL {
        py.detach(|| f(a, b))?
    } else {
        f(a, b)?
    };
    Ok(wrap(r))
}

#[pymethods]
impl PyTensor {
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyTensor>() {
            Ok(o) => {
                let r = run(py, &self.inner, &o.borrow().inner, Tensor::matmul)?;
                Ok(r.into_pyobject(py)?.into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyTensor>() {
            Ok(o) => {
                let r = run(py, &o.borrow().inner, &self.inner, Tensor::matmul)?;
                Ok(r.into_pyobject(py)?.into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    fn matmul(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &other.inner, Tensor::matmul)
    }
    fn mm(&self, py: Python<'_>, mat2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &mat2.inner, Tensor::mm)
    }
    fn bmm(&self, py: Python<'_>, mat2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &mat2.inner, Tensor::bmm)
    }
    fn mv(&self, py: Python<'_>, vec: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &vec.inner, Tensor::mv)
    }
    fn dot(&self, py: Python<'_>, other: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &other.inner, Tensor::dot)
    }
    fn outer(&self, py: Python<'_>, vec2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &vec2.inner, Tensor::outer)
    }
    fn ger(&self, py: Python<'_>, vec2: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        run(py, &self.inner, &vec2.inner, Tensor::outer)
    }
}

macro_rules! binary_fn {
    ($rust:ident, $py:literal, $a:ident, $b:ident, $op:path) => {
        #[pyfunction(name = $py)]
        fn $rust(
            py: Python<'_>,
            $a: &Bound<'_, PyAny>,
            $b: &Bound<'_, PyAny>,
        ) -> PyResult<Py<PyAny>> {
            if batched::is_batched($a) || batched::is_batched($b) {
                return batched::matmul_function($py, $a, $b);
            }
            let x = tensor_arg($a, $py, stringify!($a), 1)?;
            let y = tensor_arg($b, $py, stringify!($b), 2)?;
            run(py, &x, &y, $op)?.into_py_any(py)
        }
    };
}

binary_fn!(matmul_fn, "matmul", input, other, Tensor::matmul);
binary_fn!(mm_fn, "mm", input, mat2, Tensor::mm);
binary_fn!(bmm_fn, "bmm", input, mat2, Tensor::bmm);
binary_fn!(mv_fn, "mv", input, vec, Tensor::mv);
binary_fn!(dot_fn, "dot", input, tensor, Tensor::dot);
binary_fn!(outer_fn, "outer", input, vec2, Tensor::outer);
binary_fn!(ger_fn, "ger", input, vec2, Tensor::outer);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m => matmul_fn, mm_fn, bmm_fn, mv_fn, dot_fn, outer_fn, ger_fn);
    Ok(())
}
