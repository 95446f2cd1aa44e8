"""The long run of the differential fuzzer (tests/python/fuzz_programs/).

    PYTHONPATH=python python tools/fuzz_long.py --programs 100000 --seed 0 --jobs 2 --guard

Program ``i`` is ``random_program(seed + i)``, so a run is reproducible and a
program is named by its seed. Each runs on ferrograd and torch; the report
gives programs/s, the known mismatches (``fuzz_programs.KNOWN``) by name and
the new ones by category (``kind:op:field``). The first ``--keep`` new
mismatches of each category are shrunk (steps deleted while the same
category still fails) and written to ``--out`` as runnable programs with
what differed. ``--fd N`` also checks the gradients of N smooth float64
programs against finite differences (ferrograd alone). Without torch it
runs the ferrograd-only invariants (no crash, a failing step changes
nothing) instead. Exit status 1 when a new mismatch was found.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
os.environ.setdefault("RUST_BACKTRACE", "0")  # panics are counted, not traced


def _libs():
    import ferrograd

    try:
        import torch
    except ImportError:
        torch = None
    return ferrograd, torch


def work(args, progress=None):
    """Runs seeds [lo, hi); returns counters and the new mismatches.
    ``progress`` (a shared integer) is set to each seed before it runs."""
    lo, hi, keep, fd_every = args
    import fuzz_programs as fp

    ferrograd, torch = _libs()
    known = collections.Counter()
    cosmetic = collections.Counter()
    new = collections.Counter()
    found = {}
    fd_bad = []
    fd_n = 0
    for seed in range(lo, hi):
        if progress is not None:
            progress.value = seed
        # (first: the mismatch checks below skip to the next seed)
        if fd_every and seed % fd_every == 0:
            fd_n += 1
            q = fp.random_program(seed, smooth=True, max_steps=12)
            err = fp.finite_difference_check(ferrograd, q)
            if err:
                fd_bad.append((seed, q.source(), err))
        p = fp.random_program(seed)
        if torch is not None:
            o = fp.differential(p, ferrograd, torch)
            cosmetic.update(o.cosmetic)
            if o.mismatch is None:
                continue
            if o.known is not None:
                known[o.known.name] += 1
                continue
            cat = o.mismatch.category
        else:
            recs = fp.run_program(ferrograd, p, check_atomic=True)
            bad = [
                (i, r)
                for i, r in enumerate(recs)
                if r.error == "PanicException" or r.atomic or r.error.startswith("state:")
            ]
            if not bad:
                continue
            i, r = bad[0]
            cat = f"{p.steps[i].kind}:{p.steps[i].op}:" + (
                "crash" if not r.atomic else "not-atomic"
            )
            o = None
        new[cat] += 1
        if len(found.setdefault(cat, [])) < keep:
            found[cat].append((seed, p, o))
    return known, cosmetic, new, found, fd_bad, fd_n


def _child(task, progress, path):
    import pickle

    with open(path, "wb") as f:
        pickle.dump(work(task, progress), f)


def guarded(task):
    """``work(task)`` in child processes, so that a program that crashes
    the oracle (torch segfaults on a few; ferrograd must not) does not end
    the run: the seed it died on is run on ferrograd alone (in a child too,
    a crash there is reported as ferrograd's) and counted as an oracle
    crash, and the chunk goes on after it."""
    import pickle
    import tempfile

    ctx = mp.get_context("spawn")
    lo, hi, keep, fd_every = task
    known, cosmetic, new = collections.Counter(), collections.Counter(), collections.Counter()
    found, fd_bad, fd_n, crashes = {}, [], 0, []
    while lo < hi:
        progress = ctx.Value("q", lo)
        with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as tmp:
            path = tmp.name
        proc = ctx.Process(target=_child, args=((lo, hi, keep, fd_every), progress, path))
        proc.start()
        proc.join()
        if proc.exitcode == 0:
            with open(path, "rb") as f:
                k, c, n, fo, fb, fn = pickle.load(f)
            os.unlink(path)
            known.update(k)
            cosmetic.update(c)
            new.update(n)
            fd_bad += fb
            fd_n += fn
            for cat, xs in fo.items():
                found.setdefault(cat, []).extend(xs)
            break
        os.unlink(path)
        seed = progress.value
        alone = ctx.Process(target=_ferrograd_alone, args=(seed,))
        alone.start()
        alone.join()
        if alone.exitcode != 0:
            new[f"crash:ferrograd:exit {alone.exitcode}"] += 1
        crashes.append((seed, proc.exitcode, alone.exitcode))
        lo = seed + 1
    return known, cosmetic, new, found, fd_bad, fd_n, crashes


def _ferrograd_alone(seed):
    import fuzz_programs as fp

    ferrograd, _ = _libs()
    fp.run_program(ferrograd, fp.random_program(seed), check_atomic=True)


def shrink(seed, program, cat):
    import fuzz_programs as fp

    ferrograd, torch = _libs()

    def fails(q):
        o = fp.differential(q, ferrograd, torch)
        return o.new and o.mismatch.category == cat

    small = fp.minimize(program, fails)
    return small, fp.differential(small, ferrograd, torch).mismatch


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--programs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument(
        "--keep", type=int, default=2, help="mismatches shrunk and written per category"
    )
    ap.add_argument(
        "--fd", type=int, default=0, help="also check N smooth programs against finite differences"
    )
    ap.add_argument("--out", default="fuzz_failures.txt")
    ap.add_argument(
        "--guard",
        action="store_true",
        help="run each chunk in child processes: a program that crashes the oracle is "
        "counted and skipped instead of ending the run",
    )
    a = ap.parse_args()

    ferrograd, torch = _libs()
    print(
        f"ferrograd {ferrograd.__file__}; oracle: {'torch ' + torch.__version__ if torch else 'none (invariants only)'}"
    )
    chunk = 2000 if a.guard else 500
    fd_every = max(a.programs // a.fd, 1) if a.fd else 0
    tasks = [
        (s, min(s + chunk, a.seed + a.programs), a.keep, fd_every)
        for s in range(a.seed, a.seed + a.programs, chunk)
    ]
    known, cosmetic, new = collections.Counter(), collections.Counter(), collections.Counter()
    found, fd_bad, fd_n = {}, [], 0
    t0 = time.time()
    done = 0
    crashes = []
    if a.guard:
        import concurrent.futures

        pool = concurrent.futures.ThreadPoolExecutor(a.jobs)
        results = pool.map(guarded, tasks)
    else:
        pool = mp.Pool(a.jobs) if a.jobs > 1 else None
        results = (r + ([],) for r in (pool.imap(work, tasks) if pool else map(work, tasks)))
    for (lo, hi, _, _), (k, c, n, f, fb, fn, cr) in zip(tasks, results):
        crashes += cr
        known.update(k)
        cosmetic.update(c)
        new.update(n)
        fd_bad += fb
        fd_n += fn
        for cat, xs in f.items():
            found.setdefault(cat, []).extend(xs[: max(a.keep - len(found.get(cat, [])), 0)])
        done += hi - lo
        rate = done / (time.time() - t0)
        print(
            f"  {done} programs, {rate:.1f}/s, known {sum(known.values())}, new {sum(new.values())}",
            flush=True,
        )
    if pool:
        pool.shutdown() if a.guard else pool.close()
    elapsed = time.time() - t0

    print(
        f"\n{done} programs in {elapsed:.0f} s ({done / elapsed:.1f} programs/s, {a.jobs} job(s))"
    )
    print(f"new mismatches: {sum(new.values())}")
    for cat, cnt in new.most_common():
        print(f"  {cnt:6d}  {cat}")
    print(f"known mismatches (fuzz_programs.KNOWN): {sum(known.values())}")
    for name, cnt in known.most_common():
        print(f"  {cnt:6d}  {name}")
    print(f"known cosmetic differences passed over: {dict(cosmetic)}")
    if a.fd:
        print(f"finite differences: {fd_n} smooth programs, {len(fd_bad)} disagreeing")
    if a.guard:
        print(f"programs that crashed the oracle (skipped): {len(crashes)}")
        for seed, code, alone in crashes:
            what = "ferrograd alone: ok" if alone == 0 else f"ferrograd alone: exit {alone}"
            print(f"  seed {seed}: oracle exit {code}; {what}")

    with open(a.out, "w") as out:
        for cat, xs in sorted(found.items()):
            for seed, p, o in xs:
                if torch is not None:
                    small, m = shrink(seed, p, cat)
                    src, what = small.source(), str(m)
                else:
                    src, what = p.source(), cat
                what = "\n".join("# " + line for line in what.splitlines())
                out.write(f"# === {cat} (seed {seed})\n{src}\n{what}\n\n")
        for seed, src, err in fd_bad:
            out.write(f"# === finite differences (smooth seed {seed})\n{src}\n# --> {err}\n\n")
    if found or fd_bad:
        print(f"minimal failing programs written to {a.out}")
    return 1 if (new or fd_bad) else 0


if __name__ == "__main__":
    sys.exit(main())
