#!/usr/bin/env python3
"""Splits a `perf record --call-graph dwarf` profile of lockstep's log density into engine
stages and kernels, per thread (see bench/README.md, "Profiling").

    perf script -i perf.data -F tid,ip,sym > stacks.txt
    python3 bench/perf_stages.py stacks.txt

Stage (from the whole stack): "obs stage" (ObservationStage: the tiled, fused
likelihood over the N rows), "group-level" (the executor's op-by-op passes over the
parameters and priors, run per chain group; on a pool thread its frames are lost and it
shows as "executor other"), "R boundary" (ls_engine_log_density outside the executor:
copying the C x n_free state in and the gradient out, allocation, page faults).
Kernel: the innermost frame that matches a known kernel name.
"""
import collections
import sys

KERNELS = [
    ("Dist<(lockstep::Family)5>", "bernoulli-logit lpdf (exp, log1p)"),
    ("Dist<(lockstep::Family)0>", "normal lpdf"),
    ("truncated_lpdf", "lpdf dispatch (truncated_lpdf, dist_lpdf)"),
    ("dist_lpdf", "lpdf dispatch (truncated_lpdf, dist_lpdf)"),
    ("MatmulForward", "Xd %*% beta fwd"),
    ("MatmulBackward", "Xd %*% beta bwd"),
    ("RowDotForward", "row-dot fwd"),
    ("RowDotBackward", "row-dot bwd (incl. scatter-add)"),
    ("GatherForward", "gather fwd"),
    ("GatherBackward", "gather bwd (scatter-add)"),
    ("GatherRows", "gather rows"),
    ("BinaryForward", "elementwise fwd"),
    ("BinaryBackward", "elementwise bwd"),
    ("UnaryForward", "unary fwd"),
    ("UnaryBackward", "unary bwd"),
    ("ParamForward", "param fwd"),
    ("ParamBackward", "param bwd"),
    ("ParamJacobian", "param jacobian"),
    ("SumTerm", "sum"),
    ("SumBackward", "sum bwd"),
    ("over_rows", "touched-rows reduce"),
    ("chain_major", "chain_major copy"),
    ("Rcpp::Matrix", "R gradient matrix"),
    ("memset", "zeroing (memset/fill)"),
    ("std::fill", "zeroing (memset/fill)"),
    ("page_fault", "page faults"),
    ("ChainSum<lockstep::DensityTerm", "density loop"),
    ("futex", "waiting"),
    ("ThreadPool::drain", "pool"),
]


def samples(path):
    tid, frames = None, []
    with open(path) as f:
        for line in f:
            if not line.strip():
                if tid is not None:
                    yield tid, frames
                tid, frames = None, []
            elif line[0] not in " \t":
                tid, frames = line.split()[0], []
            else:
                parts = line.strip().split(None, 1)
                frames.append(parts[1] if len(parts) > 1 else "")
    if tid is not None:
        yield tid, frames


def stage(frames):
    s = " ".join(frames)
    if "ObservationStage" in s:
        return "obs stage"
    if "for_chain_groups" in s:
        return "group-level"
    if "Executor<double>::log_density" in s or "Executor<float>::log_density" in s:
        return "executor other"
    if "ls_engine_log_density" in s:
        return "R boundary"
    return "other"


def kernel(frames):
    for fr in frames:
        for pat, name in KERNELS:
            if pat in fr:
                return name
    return frames[0][:60] if frames else "?"


def report(title, items):
    tot = len(items)
    if not tot:
        return
    print(f"{title}: {tot} samples")
    st = collections.Counter(s for s, _ in items)
    for s, n in st.most_common():
        print(f"  {100 * n / tot:5.1f}%  {s}")
    print("  by stage and kernel (>= 0.5%):")
    for (s, k), n in collections.Counter(items).most_common():
        if 100 * n / tot >= 0.5:
            print(f"    {100 * n / tot:5.1f}%  {s:15s} {k}")


def main():
    by_tid = collections.defaultdict(list)
    for tid, frames in samples(sys.argv[1]):
        by_tid[tid].append((stage(frames), kernel(frames)))
    report("all threads", [x for v in by_tid.values() for x in v])
    if len(by_tid) > 1:
        for tid, v in sorted(by_tid.items(), key=lambda kv: -len(kv[1])):
            report(f"thread {tid}", v)


if __name__ == "__main__":
    main()
