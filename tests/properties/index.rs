//! Index lists (`x[...]`).

use super::shapes::{arg, no_panic, small};
use super::*;

#[derive(Clone, Debug)]
enum Item {
    Int(i64),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    Bool(bool),
    /// An int64 index tensor of these values.
    Ints(Vec<i64>),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => arg().prop_map(Item::Int),
        3 => (prop::option::of(arg()), prop::option::of(arg()), -1i64..4)
            .prop_map(|(a, b, s)| Item::Slice(a, b, s)),
        1 => Just(Item::NewAxis),
        1 => Just(Item::Ellipsis),
        1 => any::<bool>().prop_map(Item::Bool),
        1 => prop::collection::vec(arg(), 0..4).prop_map(Item::Ints),
    ]
}

impl Item {
    fn index(&self) -> TensorIndex {
        match self {
            Item::Int(i) => TensorIndex::Int(*i),
            Item::Slice(start, stop, step) => TensorIndex::Slice {
                start: *start,
                stop: *stop,
                step: *step,
            },
            Item::NewAxis => TensorIndex::None,
            Item::Ellipsis => TensorIndex::Ellipsis,
            Item::Bool(b) => TensorIndex::Bool(*b),
            Item::Ints(v) => TensorIndex::Tensor(Tensor::from_vec(v.clone(), &[v.len()]).unwrap()),
        }
    }
}

/// The reference of basic indexing (ints, slices, None, one ellipsis):
/// `None` when torch raises.
fn basic_index_ref(r: &Ref, items: &[Item]) -> Option<Ref> {
    let consumed = items
        .iter()
        .filter(|i| matches!(i, Item::Int(_) | Item::Slice(..)))
        .count();
    let ellipses = items.iter().filter(|i| matches!(i, Item::Ellipsis)).count();
    let nd = r.shape.len();
    if ellipses > 1 || consumed > nd {
        return None;
    }
    let mut r = r.clone();
    let mut d = 0; // the dim of `r` the next item applies to
    for it in items {
        match it {
            Item::Int(i) => {
                let size = r.shape[d] as i64;
                if *i < -size || *i >= size {
                    return None;
                }
                r = r.select(d, if *i < 0 { i + size } else { *i } as usize);
            }
            Item::Slice(start, stop, step) => {
                if *step <= 0 {
                    return None;
                }
                let size = r.shape[d] as i64;
                let clamp = |v: i64| {
                    if v < 0 {
                        v.saturating_add(size).max(0)
                    } else {
                        v.min(size)
                    }
                };
                let s = clamp(start.unwrap_or(0));
                let e = clamp(stop.unwrap_or(size)).max(s);
                let len = ((e - s) as usize).div_ceil(*step as usize);
                r = r.slice(d, s as usize, len, *step as usize);
                d += 1;
            }
            Item::NewAxis => {
                r = r.unsqueeze(d);
                d += 1;
            }
            Item::Ellipsis => d += nd - consumed,
            _ => unreachable!("basic items only"),
        }
    }
    Some(r)
}

proptest! {
    #![proptest_config(config())]

    /// `getitem` on random index lists never panics; basic index lists give
    /// the reference's view, or an error exactly when the reference has
    /// none.
    #[test]
    fn index_lists(
        shape in prop::collection::vec(0usize..5, 0..4),
        items in prop::collection::vec(item(), 0..5),
    ) {
        let ellipses = items.iter().filter(|i| matches!(i, Item::Ellipsis)).count();
        prop_assume!(strict() || ellipses <= 1, "K4");
        let t = small(&shape);
        let index: Vec<TensorIndex> = items.iter().map(Item::index).collect();
        let got = no_panic("getitem", || t.getitem(&index))?;
        let basic = items.iter().all(|i| {
            matches!(i, Item::Int(_) | Item::Slice(..) | Item::NewAxis | Item::Ellipsis)
        });
        if basic {
            let want = basic_index_ref(&Ref::base(&shape), &items);
            match (&got, &want) {
                (Ok(g), Some(w)) => {
                    prop_assert_eq!(g.shape(), &w.shape[..]);
                    prop_assert_eq!(g.to_f64_vec(), w.idx.iter().map(|&i| i as f64).collect::<Vec<_>>());
                }
                (Err(_), None) => {}
                _ => prop_assert!(false, "{:?} of {:?}: {:?} vs reference {:?}", items, shape, got.map(|g| g.dims()), want.map(|w| w.shape)),
            }
        }
        // Writing through the same index list: never a panic either.
        let target = t.clone_tensor().unwrap();
        no_panic("setitem", || target.setitem_scalar(&index, 7.0.into()))?.ok();
    }
}

/// Cases the property tests found in a debug build (integer overflow
/// panics there, wraps in release).
#[test]
fn expand_of_empty_shape_with_huge_sizes() {
    let t = small(&[]);
    let e = t.expand(&[i64::MAX, 0, i64::MAX]).unwrap();
    assert_eq!(e.numel(), 0);
    assert_eq!(e.to_f64_vec(), Vec::<f64>::new());
}

#[test]
fn index_list_out_of_range_is_an_error() {
    let t = small(&[3, 4]);
    let rows = Tensor::from_vec(vec![2i64, i64::MAX / 2], &[2]).unwrap();
    let cols = Tensor::from_vec(vec![3i64, i64::MAX / 2], &[2]).unwrap();
    let got = t.getitem(&[TensorIndex::Tensor(rows), TensorIndex::Tensor(cols)]);
    assert!(got.is_err(), "{:?}", got.map(|g| g.dims()));
}
