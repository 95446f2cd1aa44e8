//! The Python methods of a batched tensor: each runs its op's rule.

use super::*;

#[pymethods]
impl PyBatched {
    #[getter]
    fn shape<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        make_size(slf.py(), &p.logical)
    }
    #[getter]
    fn ndim(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(parts(slf.as_any())?.expect("batched").rank())
    }
    fn dim(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Self::ndim(slf)
    }
    fn numel(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(parts(slf.as_any())?
            .expect("batched")
            .logical
            .iter()
            .product())
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(slf: &Bound<'py, Self>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        match dim {
            None => make_size(slf.py(), &p.logical),
            Some(d) => Ok(p.logical[wrap_dim(d, p.rank())?]
                .into_pyobject(slf.py())?
                .into_any()),
        }
    }
    /// `isinstance(x, Tensor)` holds inside the mapped function.
    #[getter]
    fn __class__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, PyAny> {
        slf.py().get_type::<PyTensor>().into_any()
    }
    #[getter(T)]
    fn t_attr(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let p = parts(slf.as_any())?.expect("batched");
        let nb = p.nb();
        let mut dims: Vec<usize> = (0..nb).collect();
        dims.extend((nb..nb + p.rank()).rev());
        wrap_result(p.phys.call_method1("permute", (dims,))?, &p.levels)
    }
    #[getter(mT)]
    fn mt_attr(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(
            slf.as_any(),
            "transpose",
            vec![
                (-2i64).into_pyobject(slf.py())?.into_any(),
                (-1i64).into_pyobject(slf.py())?.into_any(),
            ],
            None,
        )
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let b = slf.get();
        let (lvl, _) = b.levels.last().expect("batched");
        Ok(format!(
            "BatchedTensor(lvl={lvl}, bdim={}, value=\n{})",
            b.levels.len() - 1,
            b.phys.bind(slf.py()).repr()?
        ))
    }
    fn __len__(slf: &Bound<'_, Self>) -> PyResult<usize> {
        let p = parts(slf.as_any())?.expect("batched");
        p.logical
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let parts_ = dispatch(slf.as_any(), "unbind", vec![], None)?.into_bound(slf.py());
        parts_.try_iter().map(|i| i.into_any())
    }
    fn __bool__(_slf: &Bound<'_, Self>) -> PyResult<bool> {
        Err(PyRuntimeError::new_err(crate::ops::batching::CONTROL_FLOW))
    }
    fn __float__(_slf: &Bound<'_, Self>) -> PyResult<f64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __int__(_slf: &Bound<'_, Self>) -> PyResult<i64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __index__(_slf: &Bound<'_, Self>) -> PyResult<i64> {
        Err(PyRuntimeError::new_err(crate::ops::batching::ITEM))
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__getitem__", vec![key.clone()], None)
    }
    fn __setitem__(
        _slf: &Bound<'_, Self>,
        _key: &Bound<'_, PyAny>,
        _v: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        Err(fallback("__setitem__"))
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__neg__", vec![], None)
    }
    fn __abs__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__abs__", vec![], None)
    }
    fn __invert__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        dispatch(slf.as_any(), "__invert__", vec![], None)
    }
    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp::*;
        let name = match op {
            Lt => "__lt__",
            Le => "__le__",
            Eq => "__eq__",
            Ne => "__ne__",
            Gt => "__gt__",
            Ge => "__ge__",
        };
        dispatch(slf.as_any(), name, vec![other.clone()], None)
    }
    /// Any other method: its batching rule, or the fallback.
    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        // A method with a rule runs it; any other method of a tensor is
        // bound too (a call raises the fallback naming it); other
        // attributes (dtype, requires_grad, grad_fn, ...) are the physical
        // tensor's.
        let v = if rule(name).is_some() {
            None
        } else {
            Some(slf.get().phys.bind(py).getattr(name)?)
        };
        match v {
            Some(v) if !v.is_callable() => Ok(v),
            _ => Ok(Bound::new(
                py,
                BatchedMethod {
                    target: slf.clone().unbind(),
                    name: name.to_string(),
                },
            )?
            .into_any()),
        }
    }
}

macro_rules! binary_dunders {
    ($($name:ident),*) => {
        #[pymethods]
        impl PyBatched {
            $(
                fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    dispatch(slf.as_any(), stringify!($name), vec![other.clone()], None)
                }
            )*
        }
    };
}
binary_dunders!(
    __add__,
    __radd__,
    __sub__,
    __rsub__,
    __mul__,
    __rmul__,
    __truediv__,
    __rtruediv__,
    __floordiv__,
    __rfloordiv__,
    __mod__,
    __rmod__,
    __matmul__,
    __rmatmul__,
    __and__,
    __rand__,
    __or__,
    __ror__,
    __xor__,
    __rxor__
);

/// `x op= y` on a batched `x`: the in-place method's rule (or the
/// fallback); PyO3 returns `x` itself, so the name stays bound to the same tensor
/// and a view's base sees the write (`__add__`'s result would rebind it).
macro_rules! inplace_dunders {
    ($($name:ident => $method:literal),*) => {
        #[pymethods]
        impl PyBatched {
            $(
                fn $name<'py>(
                    slf: &Bound<'py, Self>,
                    other: &Bound<'py, PyAny>,
                ) -> PyResult<()> {
                    dispatch(slf.as_any(), $method, vec![other.clone()], None).map(drop)
                }
            )*
        }
    };
}
inplace_dunders!(
    __iadd__ => "add_",
    __isub__ => "sub_",
    __imul__ => "mul_",
    __itruediv__ => "div_",
    __ifloordiv__ => "floor_divide_",
    __imod__ => "remainder_",
    __iand__ => "bitwise_and_",
    __ior__ => "bitwise_or_",
    __ixor__ => "bitwise_xor_"
);

#[pymethods]
impl PyBatched {
    fn __ipow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        dispatch(slf.as_any(), "pow_", vec![other.clone()], None).map(drop)
    }
    fn __pow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        dispatch(slf.as_any(), "__pow__", vec![other.clone()], None)
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        dispatch(slf.as_any(), "__rpow__", vec![other.clone()], None)
    }
}

/// A bound method of a batched tensor: calls run its rule.
#[pyclass(name = "_BatchedMethod", module = "ferrograd._C", frozen)]
pub struct BatchedMethod {
    target: Py<PyBatched>,
    name: String,
}

#[pymethods]
impl BatchedMethod {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let slf = self.target.bind(py).clone().into_any();
        let kw = match kwargs {
            Some(k) if !k.is_empty() => Some(k.copy()?),
            _ => None,
        };
        dispatch(&slf, &self.name, args.iter().collect(), kw)
    }
}
