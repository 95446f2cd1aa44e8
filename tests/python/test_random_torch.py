"""torch's random stream: the same seed gives torch's values, bitwise.

ferrograd's generator is torch's CPU one (mt19937 seeded as ATen seeds it,
the cached Box-Muller sample, torch's transforms and its 16-wide vectorised
normal fill). With torch installed every sampler is compared with torch on
the same seed, shape and dtype; without it, the values below (printed by
torch 2.13) are the oracle.

torch's scalar `bernoulli_(p)` (hence `dropout`) uses MKL's own stream on
Intel CPUs (an MKL build checks the vendor), so those two comparisons run
where torch uses its generic kernel (other vendors)."""

import ferrograd as fg
import numpy as np
import pytest

DTYPES = ["float32", "float64"]
SIZES = [1, 5, 15, 16, 17, 37, 1000]


def _intel():
    try:
        with open("/proc/cpuinfo") as f:
            return "GenuineIntel" in f.read(4096)
    except OSError:
        return False


def same(a, b):
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.numpy() if hasattr(b, "numpy") else np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def run_both(torch, fn, seed=0):
    fg.manual_seed(seed)
    torch.manual_seed(seed)
    same(fn(fg), fn(torch))


# ----- without torch: torch's printed values -----


def test_known_values_from_torch():
    fg.manual_seed(42)
    assert fg.rand(3).tolist() == [0.8822692632675171, 0.9150039553642273, 0.38286375999450684]
    assert fg.randn(3, dtype=fg.float64).tolist() == [
        -0.8293191865182478,
        -1.6137069712013394,
        -0.21470453472074932,
    ]
    fg.manual_seed(42)
    assert fg.randn(20)[-3:].tolist() == [
        -0.3957104980945587,
        0.8034093379974365,
        -0.6215953826904297,
    ]
    fg.manual_seed(42)
    assert fg.randint(0, 1000, (5,)).tolist() == [542, 67, 876, 414, 26]
    assert fg.randperm(6).tolist() == [5, 1, 2, 4, 0, 3]
    fg.manual_seed(0)
    assert fg.multinomial(fg.tensor([0.1, 0.2, 0.7]), 4, True).tolist() == [2, 2, 2, 2]


def test_default_seed_and_generator_api():
    g = fg.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert fg.manual_seed(11) is fg.default_generator
    assert fg.initial_seed() == 11
    assert str(g.device) == "cpu"
    # negative seeds wrap as in torch
    assert fg.Generator().manual_seed(-1).initial_seed() == 2**64 - 1
    with pytest.raises(RuntimeError):
        g.manual_seed(2**64)
    s = fg.seed()
    assert fg.initial_seed() == s and 0 <= s < 2**63


def test_generator_streams_are_independent():
    g1 = fg.Generator().manual_seed(5)
    g2 = fg.Generator().manual_seed(5)
    fg.manual_seed(5)
    a = fg.rand(4, generator=g1)
    fg.rand(100)  # the default generator moves, g2 does not
    assert fg.rand(4, generator=g2).tolist() == a.tolist()
    assert fg.rand(4, generator=g1).tolist() != a.tolist()


def test_state_round_trip_keeps_cached_normal():
    fg.manual_seed(9)
    fg.randn(3, dtype=fg.float64)  # leaves the second Box-Muller sample cached
    st = fg.get_rng_state()
    assert st.shape == (5056,) and st.dtype == fg.int64
    a = fg.randn(5, dtype=fg.float64)
    fg.set_rng_state(st)
    assert fg.randn(5, dtype=fg.float64).tolist() == a.tolist()
    g = fg.Generator()
    g.set_state(st)
    assert fg.randn(5, dtype=fg.float64, generator=g).tolist() == a.tolist()


def test_bad_state_and_generator_change_nothing():
    fg.manual_seed(1)
    st = fg.get_rng_state()
    with pytest.raises(RuntimeError, match="5056"):
        fg.set_rng_state(st[:-1])
    bad = st.clone()
    bad[8] = 0  # left = 0: not a valid mt19937 state
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        fg.set_rng_state(bad)
    with pytest.raises(TypeError):
        fg.set_rng_state(st.double())
    with pytest.raises(TypeError, match="generator"):
        fg.rand(3, generator=5)
    assert fg.get_rng_state().tolist() == st.tolist()


def test_inplace_rules_still_apply():
    w = fg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.normal_()
    with fg.no_grad():
        w.uniform_()
    assert w._version == 1


def test_errors_like_torch():
    with pytest.raises(RuntimeError, match="from=2 > to=1"):
        fg.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        fg.empty(3).normal_(0, -1)
    with pytest.raises(NotImplementedError):
        fg.empty(3, dtype=fg.int64).normal_()
    with pytest.raises(RuntimeError, match="n_sample > prob_dist.size"):
        fg.multinomial(fg.ones(3), 4)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        fg.multinomial(fg.zeros(3), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        fg.multinomial(fg.ones(1, 1, 3), 1)
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        fg.empty(2, dtype=fg.int64).random_(3, 3)


# ----- against torch -----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn_like_torch(torch, dtype, n):
    for seed in (0, 42, 2**40 + 3):
        run_both(torch, lambda L: L.rand(n, dtype=getattr(L, dtype)), seed)
        # randn twice: the second call starts from the first one's leftovers
        run_both(
            torch,
            lambda L: L.cat(
                [L.randn(n, dtype=getattr(L, dtype)), L.randn(3, dtype=getattr(L, dtype))]
            ),
            seed,
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_shapes_and_like_functions(torch, dtype):
    run_both(torch, lambda L: L.randn(4, 9, 3, dtype=getattr(L, dtype)))
    run_both(torch, lambda L: L.rand(2, 0, dtype=getattr(L, dtype)))
    run_both(torch, lambda L: L.randn_like(L.zeros(5, 7, dtype=getattr(L, dtype))))
    run_both(torch, lambda L: L.rand_like(L.zeros(33, dtype=getattr(L, dtype))))
    run_both(torch, lambda L: L.randint_like(L.zeros(6, dtype=getattr(L, dtype)), 3, 9))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [7, 16, 40, 301])
def test_fills_like_torch(torch, dtype, n):
    def mk(L):
        return L.empty(n, dtype=getattr(L, dtype))

    run_both(torch, lambda L: mk(L).uniform_(-2, 3.5))
    run_both(torch, lambda L: mk(L).normal_(2.0, 3.5))
    run_both(torch, lambda L: mk(L).exponential_(1.5))
    p = np.linspace(0, 1, n).astype(dtype)
    run_both(torch, lambda L: L.bernoulli(L.tensor(p)))
    run_both(torch, lambda L: L.tensor(p).bernoulli())


def test_non_contiguous_fill_follows_memory_order(torch):
    # torch fills a transposed tensor in memory order with its scalar path
    run_both(torch, lambda L: L.empty(7, 40).t().normal_())
    run_both(torch, lambda L: L.empty(6, 5, dtype=L.float64).t().uniform_())
    run_both(torch, lambda L: L.empty(8, 6)[:, ::2].exponential_())


@pytest.mark.skipif(
    _intel(), reason="torch's MKL build draws bernoulli_(p) from MKL's stream on Intel"
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_scalar_and_dropout_like_torch(torch, dtype):
    run_both(torch, lambda L: L.empty(50, dtype=getattr(L, dtype)).bernoulli_(0.3))
    run_both(torch, lambda L: L.empty(9, dtype=L.int64).bernoulli_(0.5))
    run_both(
        torch,
        lambda L: L.nn.functional.dropout(L.ones(4, 25, dtype=getattr(L, dtype)), 0.4),
    )
    run_both(torch, lambda L: L.nn.Dropout(0.25)(L.ones(64, dtype=getattr(L, dtype))))


@pytest.mark.parametrize("lo,hi", [(0, 10), (-5, 100), (0, 2**28 - 1), (0, 2**28), (-7, 2**40)])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_randint_like_torch(torch, lo, hi, dtype):
    run_both(torch, lambda L: L.randint(lo, hi, (3, 11), dtype=getattr(L, dtype)))
    run_both(torch, lambda L: L.randint(hi, (5,), dtype=getattr(L, dtype)))


@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000])
def test_randperm_like_torch(torch, n):
    run_both(torch, lambda L: L.randperm(n))
    run_both(torch, lambda L: L.randperm(n, dtype=L.float64))


@pytest.mark.parametrize("args", [(), (10,), (-3, 7), (5, None), (-(2**63), None), (0, 2**40)])
@pytest.mark.parametrize("dtype", ["int64", "float64", "float32", "bool"])
def test_random__like_torch(torch, args, dtype):
    if dtype == "bool" and args not in [(), (2,)]:
        return
    if dtype.startswith("float") and args[:1] == (-(2**63),):
        return
    if dtype == "float32" and args == (0, 2**40):
        return  # torch warns: outside float32's exact integers
    run_both(torch, lambda L: L.empty(40, dtype=getattr(L, dtype)).random_(*args))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n,replacement", [(1, False), (1, True), (10, False), (50, False), (20, True)]
)
def test_multinomial_like_torch(torch, dtype, n, replacement):
    p = np.random.RandomState(3).rand(3, 50).astype(dtype)
    for seed in (0, 3):
        run_both(torch, lambda L: L.multinomial(L.tensor(p), n, replacement), seed)
        run_both(torch, lambda L: L.tensor(p[1]).multinomial(n, replacement=replacement), seed)


def test_generator_objects_like_torch(torch):
    g1 = fg.Generator().manual_seed(5)
    g2 = torch.Generator().manual_seed(5)
    same(fg.rand(20, generator=g1), torch.rand(20, generator=g2))
    same(fg.randn(7, generator=g1), torch.randn(7, generator=g2))
    same(fg.empty(3).normal_(generator=g1), torch.empty(3).normal_(generator=g2))
    same(fg.randint(0, 9, (4,), generator=g1), torch.randint(0, 9, (4,), generator=g2))
    same(fg.randperm(9, generator=g1), torch.randperm(9, generator=g2))
    same(
        fg.multinomial(fg.ones(5), 3, generator=g1),
        torch.multinomial(torch.ones(5), 3, generator=g2),
    )
    assert fg.Generator().initial_seed() == torch.Generator().initial_seed()


def test_states_move_between_libraries(torch):
    g2 = torch.Generator().manual_seed(77)
    torch.randn(3, dtype=torch.float64, generator=g2)  # a cached sample in the state
    g1 = fg.Generator().set_state(g2.get_state())
    np.testing.assert_array_equal(g1.get_state().numpy().astype(np.uint8), g2.get_state().numpy())
    same(
        fg.randn(9, dtype=fg.float64, generator=g1),
        torch.randn(9, dtype=torch.float64, generator=g2),
    )
    # and back: torch restores ferrograd's state
    fg.manual_seed(8)
    fg.rand(700)
    torch.set_rng_state(torch.tensor(fg.get_rng_state().tolist(), dtype=torch.uint8))
    same(fg.randn(33), torch.randn(33))
