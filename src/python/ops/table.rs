//! `_C._op_table()`: the rows of `crate::ops::table`, one dict per op, for
//! the stub generator, the docs and the registry tests.

use crate::ops::table::rows;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

#[pyfunction]
fn _op_table(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    rows()
        .map(|r| {
            let d = PyDict::new(py);
            d.set_item("name", r.name)?;
            d.set_item("inplace", r.inplace)?;
            d.set_item("aliases", PyTuple::new(py, r.aliases)?)?;
            d.set_item("node", r.node)?;
            d.set_item("doc", r.doc.trim())?;
            d.set_item("domain", r.domain)?;
            d.set_item("kind", r.kind.name())?;
            d.set_item("batch_rule", r.batch.name())?;
            d.set_item("form", r.form)?;
            d.set_item("dunders", PyTuple::new(py, r.dunders)?)?;
            Ok(d)
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_op_table, m)?)
}
