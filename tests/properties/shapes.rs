//! Shape and argument math: errors, never panics.

use super::*;

/// Runs `f`, turning a panic into a test failure that names `what`.
pub(super) fn no_panic<T>(
    what: &str,
    f: impl FnOnce() -> T,
) -> std::result::Result<T, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// A size: mostly small, sometimes huge (up to usize::MAX).
pub(super) fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..5,
        1 => Just(usize::MAX),
        1 => (1usize << 20)..(1usize << 40),
        1 => any::<usize>(),
    ]
}

/// An i64 argument: mostly small, sometimes extreme.
pub(super) fn arg() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -6i64..6,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => any::<i64>(),
        1 => (1i64 << 31)..(1i64 << 62),
    ]
}

/// Reference broadcast (numpy rules).
pub(super) fn broadcast_ref(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (da, db) {
                _ if da == db => Some(da),
                (1, _) => Some(db),
                (_, 1) => Some(da),
                _ => None,
            }
        })
        .collect()
}

/// `Some(product)` of `shape` when it does not overflow.
pub(super) fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// A tensor of `shape` (small numel) whose elements are 0, 1, 2, ...
pub(super) fn small(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f64).collect::<Vec<f64>>(), shape).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn broadcast_shapes_match_numpy_rules(
        a in prop::collection::vec(size(), 0..5),
        b in prop::collection::vec(size(), 0..5),
    ) {
        let got = no_panic("broadcast_shapes", || broadcast_shapes(&a, &b))?;
        match (got, broadcast_ref(&a, &b)) {
            (Ok(g), Some(r)) => prop_assert_eq!(g.to_vec(), r),
            (Err(_), None) => {}
            (g, r) => prop_assert!(false, "{:?} vs reference {:?}", g, r),
        }
    }

    /// expand of a tensor with size-1 dims to random (huge) sizes: the
    /// expanded shape when the sizes are valid, else an error.
    #[test]
    fn expand_to_random_sizes(
        ones in 0usize..4,
        target in prop::collection::vec(arg(), 0..6),
    ) {
        let t = small(&vec![1; ones]);
        let got = no_panic("expand", || t.expand(&target))?;
        let valid = target.len() >= ones
            && target.iter().enumerate().all(|(i, &d)| d >= 0 || (d == -1 && i >= target.len() - ones));
        let shape: Vec<usize> = target
            .iter()
            .map(|&d| if d == -1 { 1 } else { d.max(0) as usize })
            .collect();
        if !valid {
            prop_assert!(got.is_err(), "expand({:?}) of {:?}: {:?}", target, t.shape(), got);
        } else if checked_numel(&shape).is_some_and(|n| n <= i64::MAX as usize) {
            let e = got.unwrap();
            prop_assert_eq!(e.shape(), &shape[..]);
            // Reading a small expanded view walks the broadcast correctly.
            if e.numel() <= 4096 {
                prop_assert_eq!(e.to_f64_vec(), vec![0.0; e.numel()]);
            }
        } else {
            // numel would overflow: torch says "numel: integer
            // multiplication overflow".
            prop_assert!(got.is_err(), "expand({:?}): numel overflows, yet {:?}", target, got);
        }
    }

    /// view / reshape with random (huge, negative, several -1) sizes.
    #[test]
    fn reshape_to_random_sizes(
        shape in prop::collection::vec(0usize..4, 0..4),
        target in prop::collection::vec(arg(), 0..5),
    ) {
        let t = small(&shape);
        let n = t.numel();
        let got = no_panic("reshape", || t.reshape(&target))?;
        let infer = target.iter().filter(|&&d| d == -1).count();
        let known: Option<usize> = target
            .iter()
            .filter(|&&d| d != -1)
            .try_fold(1usize, |k, &d| usize::try_from(d).ok().and_then(|d| k.checked_mul(d)));
        let ok = target.iter().all(|&d| d >= -1)
            && infer <= 1
            && match (infer, known) {
                (0, Some(k)) => k == n,
                (1, Some(k)) => k != 0 && n.is_multiple_of(k),
                _ => false,
            };
        match got {
            Ok(r) => {
                prop_assert!(ok, "reshape({:?}) of {:?} gave {:?}", target, shape, r.shape());
                prop_assert_eq!(r.numel(), n);
                prop_assert_eq!(r.to_f64_vec(), t.to_f64_vec());
            }
            Err(_) => prop_assert!(!ok, "reshape({:?}) of {:?} failed", target, shape),
        }
    }

    /// narrow / slice / select / transpose / permute / unsqueeze / flatten
    /// with random (extreme) arguments on small tensors: the reference's
    /// result or an error.
    #[test]
    fn view_arguments(
        shape in prop::collection::vec(0usize..5, 0..4),
        x in arg(),
        y in arg(),
        len in size(),
        dims in prop::collection::vec(arg(), 0..5),
    ) {
        let t = small(&shape);
        let r = Ref::base(&shape);
        let nd = shape.len() as i64;
        let wrap = |d: i64, n: i64| -> Option<usize> {
            let n1 = n.max(1);
            (d >= -n1 && d < n1).then(|| if d < 0 { d + n1 } else { d } as usize)
        };
        let values = |t: &Tensor| t.to_f64_vec();
        let ref_values = |r: &Ref| r.idx.iter().map(|&i| i as f64).collect::<Vec<f64>>();

        // narrow(dim, start, length)
        let got = no_panic("narrow", || t.narrow(x, y, len))?;
        let want = wrap(x, nd).filter(|_| nd > 0).and_then(|d| {
            let size = shape[d] as i64;
            let start = if y < 0 { y.checked_add(size)? } else { y };
            (0..=size).contains(&start).then_some(())?;
            (start as usize).checked_add(len).filter(|&e| e <= shape[d])?;
            Some(r.slice(d, start as usize, len, 1))
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "narrow({}, {}, {}) of {:?}: {:?}", x, y, len, shape, got.map(|g| g.dims())),
        }

        // slice(dim, start, stop, step) with Python rules
        let step = (len % 7) as i64 - 1; // -1..=5
        let got = no_panic("slice", || t.slice(x, Some(y), dims.first().copied(), step))?;
        let want = wrap(x, nd).filter(|_| nd > 0 && step > 0).map(|d| {
            let size = shape[d] as i64;
            let clamp = |v: i64| if v < 0 { (v.saturating_add(size)).max(0) } else { v.min(size) };
            let s = clamp(y);
            let e = clamp(dims.first().copied().unwrap_or(size)).max(s);
            let len = ((e - s) as usize).div_ceil(step as usize);
            r.slice(d, s as usize, len, step as usize)
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "slice({}, {}, {:?}, {}) of {:?}: {:?}", x, y, dims.first(), step, shape, got.map(|g| g.dims())),
        }

        // select(dim, index)
        let got = no_panic("select", || t.select(x, y))?;
        let want = wrap(x, nd).filter(|_| nd > 0).and_then(|d| {
            let size = shape[d] as i64;
            (y >= -size && y < size).then(|| r.select(d, if y < 0 { y + size } else { y } as usize))
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "select({}, {}) of {:?}: {:?}", x, y, shape, got.map(|g| g.dims())),
        }

        // transpose(dim0, dim1)
        let got = no_panic("transpose", || t.transpose(x, y))?;
        let want = wrap(x, nd).zip(wrap(y, nd)).map(|(a, b)| {
            if nd == 0 { r.clone() } else { r.transpose(a, b) }
        });
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "transpose({}, {}) of {:?}: {:?}", x, y, shape, got.map(|g| g.dims())),
        }

        // permute(dims)
        let got = no_panic("permute", || t.permute(&dims))?;
        let wrapped: Option<Vec<usize>> = dims.iter().map(|&d| wrap(d, nd)).collect();
        let want = wrapped.filter(|p| {
            let mut s = p.clone();
            s.sort_unstable();
            s.dedup();
            p.len() == shape.len() && s.len() == p.len()
        }).map(|p| r.permute(&p));
        match (&got, &want) {
            (Ok(g), Some(w)) => prop_assert_eq!(values(g), ref_values(w)),
            (Err(_), None) => {}
            _ => prop_assert!(false, "permute({:?}) of {:?}: {:?}", dims, shape, got.map(|g| g.dims())),
        }

        // unsqueeze(dim), flatten(start, end), squeeze(dims)
        let got = no_panic("unsqueeze", || t.unsqueeze(x))?;
        match (&got, wrap(x, nd + 1)) {
            (Ok(g), Some(d)) => prop_assert_eq!(g.shape(), &r.unsqueeze(d).shape[..]),
            (Err(_), None) => {}
            _ => prop_assert!(false, "unsqueeze({}) of {:?}: {:?}", x, shape, got.map(|g| g.dims())),
        }
        let got = no_panic("flatten", || t.flatten(x, y))?;
        if let Ok(g) = &got {
            prop_assert_eq!(g.to_f64_vec(), t.to_f64_vec());
        }
        let got = no_panic("squeeze", || t.squeeze(Some(&dims)))?;
        let all_valid = dims.iter().all(|&d| wrap(d, nd).is_some());
        prop_assert_eq!(got.is_ok(), all_valid, "squeeze({:?}) of {:?}", dims, shape);
    }
}
