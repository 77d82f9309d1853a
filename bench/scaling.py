#!/usr/bin/env python3
"""Predicted data-parallel scaling efficiency of ort_train's bucketed
allreduce: a cost model, not a measurement (no machine here has two GPUs).

  python3 bench/scaling.py [--mfu 0.40] [--gpus 8,16,...,512]

Per step and GPU:
  compute  T_c = 6 * params * tokens_per_gpu / (peak_flops * mfu)
           (forward 1/3, backward 2/3 of it)
  allreduce of the fp16/bf16 gradients (2 bytes per parameter), hierarchical
           as NCCL runs it on multi-GPU nodes: a ring reduce-scatter inside
           the node over NVLink, a ring allreduce of each GPU's 1/g shard
           across nodes over its own InfiniBand NIC, a ring all-gather inside
           the node; each ring of p members costs
           (p - 1) / p * bytes / bandwidth + (p - 1) * alpha per phase
  overlap  buckets (25 MB) start as the backward finishes their gradients:
           all but the last bucket hide behind the backward, so the exposed
           time is max(T_ar - T_bwd * (1 - 1/buckets), T_ar / buckets)
  stragglers every step waits for the slowest of N GPUs: with per-GPU step
           times varying by a relative sigma (--jitter, assumed 1.5%), the
           expected maximum of N is about T_c * sigma * sqrt(2 ln N)
  efficiency = T_c / (T_c + exposed + stragglers)   (also printed without
           the straggler term: communication alone)

Hardware (DGX A100-like): 8 GPUs per node, 312 TFLOP/s bf16 peak,
NVLink 3 at 240 GB/s achieved bus bandwidth per GPU, one HDR InfiniBand NIC
(200 Gb/s, 23 GB/s achieved) per GPU, alpha 5 us inside a node, 10 us across
nodes. The MFU is an assumption (--mfu); change it to see the sensitivity.
"""
import argparse
import math

MODELS = {
    # name: (parameters, tokens per GPU per step, what the batch is)
    "BERT-large (seq 128, 64 seq/GPU)": (340e6, 128 * 64, ""),
    "GPT-2 XL (seq 1024, 8 seq/GPU)": (1.56e9, 1024 * 8, ""),
}
PUBLISHED = {
    "BERT-large (seq 128, 64 seq/GPU)": "NVIDIA BERT-large pretraining, DGX A100: about 94-95% at 256 GPUs",
    "GPT-2 XL (seq 1024, 8 seq/GPU)": "Horovod (ResNet-101/Inception V3, 512 GPUs): about 90%",
}


def ring(p, nbytes, bandwidth, alpha):
    """One ring phase (reduce-scatter or all-gather) over p members."""
    if p <= 1:
        return 0.0
    return (p - 1) / p * nbytes / bandwidth + (p - 1) * alpha


def allreduce_time(gpus, nbytes, a):
    g = min(gpus, a.gpus_per_node)
    nodes = math.ceil(gpus / g)
    intra = 2 * ring(g, nbytes, a.nvlink_gbs * 1e9, a.alpha_intra_us * 1e-6)
    shard = nbytes / g
    inter = 2 * ring(nodes, shard, a.ib_gbs * 1e9, a.alpha_inter_us * 1e-6)
    return intra + inter


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mfu", type=float, default=0.40, help="achieved share of peak FLOP/s (assumed)")
    ap.add_argument("--peak-tflops", type=float, default=312.0)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--nvlink-gbs", type=float, default=240.0)
    ap.add_argument("--ib-gbs", type=float, default=23.0)
    ap.add_argument("--alpha-intra-us", type=float, default=5.0)
    ap.add_argument("--alpha-inter-us", type=float, default=10.0)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--jitter", type=float, default=0.015, help="relative spread of per-GPU step times (assumed)")
    ap.add_argument("--gpus", default="8,16,32,64,128,256,512")
    a = ap.parse_args()
    gpus = [int(x) for x in a.gpus.split(",")]
    print(f"Predicted scaling efficiency (cost model, bench/scaling.py): MFU {a.mfu:.2f} of "
          f"{a.peak_tflops:.0f} TFLOP/s, {a.gpus_per_node} GPUs/node, NVLink {a.nvlink_gbs:.0f} GB/s, "
          f"IB {a.ib_gbs:.0f} GB/s per GPU, {a.bucket_mb:.0f} MB buckets, bf16 gradients, jitter {100 * a.jitter:.1f}%")
    for name, (params, tokens, _) in MODELS.items():
        t_c = 6 * params * tokens / (a.peak_tflops * 1e12 * a.mfu)
        t_bwd = t_c * 2 / 3
        nbytes = 2 * params
        buckets = max(1, math.ceil(nbytes / (a.bucket_mb * 1e6)))
        print(f"\n{name}: compute {t_c * 1e3:.0f} ms/step, gradients {nbytes / 1e6:.0f} MB in {buckets} buckets")
        print(f"{'GPUs':>6}{'allreduce ms':>14}{'exposed ms':>12}{'comm only':>11}{'straggler ms':>14}"
              f"{'efficiency':>12}")
        for n in gpus:
            t_ar = allreduce_time(n, nbytes, a)
            exposed = max(t_ar - t_bwd * (1 - 1 / buckets), t_ar / buckets)
            straggle = t_c * a.jitter * math.sqrt(2 * math.log(n)) if n > 1 else 0.0
            comm_only = t_c / (t_c + exposed)
            eff = t_c / (t_c + exposed + straggle)
            print(f"{n:6d}{t_ar * 1e3:14.1f}{exposed * 1e3:12.1f}{100 * comm_only:10.1f}%{straggle * 1e3:14.1f}"
                  f"{100 * eff:11.1f}%")
        print(f"published: {PUBLISHED[name]}")


if __name__ == "__main__":
    main()
