/*
 * calib_keys.h: the single table of calibration keys (the `calibration:`
 * section of a config, what `stepcast calibrate` writes): name, bounds, unit,
 * meaning and the sc_cost_params member each one sets. The config loader walks
 * it for YAML and --set, the docs generator for docs/CONFIG.md, the collective
 * model and its fit for their parameters and priors. Pure X-macros: depends on
 * nothing, so every stage may include it.
 *
 * A value of 0 means "the model's default" for every key (the defaults are
 * the cost models': src/cost/params.c, src/cost/comm_nccl.c,
 * src/cost/interf.c); an explicit value must lie in [lo, hi].
 */
#ifndef SC_CALIB_KEYS_H
#define SC_CALIB_KEYS_H

/* X(key, lo, hi, unit, doc): keys that are members of sc_cost_params of the
 * same name. Bounds are physical: an efficiency is a fraction of a peak, a
 * per-kernel cost below a millisecond, a slowdown at most tenfold. */
#define SC_CALIB_KEYS(X)                                                                          \
  X(gemm_eff, 0.01, 1.0, "", "Best-shape GEMM fraction of dense peak.")                            \
  X(fp8_gemm_eff, 0.01, 1.0, "",                                                                  \
    "Best-shape FP8 GEMM fraction of the FP8 dense peak (training.precision fp8: the linear "     \
    "layers' GEMMs).")                                                                            \
  X(gemm_dim_half, 0.5, 65536.0, "elements",                                                      \
    "GEMM reduction length K at which efficiency halves (per-tile fixed cost amortised over K; "  \
    "an FP8 GEMM's is this times its best-shape rate over the BF16 one).")                        \
  X(attn_eff, 0.01, 1.0, "",                                                                      \
    "FlashAttention-2 (training.attention flash) fraction of peak at long sequences, forward "     \
    "and backward.")                                                                              \
  X(cudnn_attn_eff, 0.01, 1.0, "",                                                                \
    "The same for cuDNN fused attention (training.attention cudnn: Transformer Engine's "          \
    "FusedAttention, what Megatron-Core runs on Hopper).")                                        \
  X(mem_eff, 0.01, 1.0, "", "Fraction of HBM bandwidth reached by memory-bound kernels.")         \
  X(scores_mem_eff, 0.01, 1.0, "",                                                                \
    "Fraction of HBM bandwidth reached by the kernels of unfused attention (training.attention "   \
    "unfused) that stream the s x s scores: the score GEMMs' traffic, softmax and dropout.")       \
  X(kernel_overhead_us, 0.01, 1000.0, "us", "Fixed cost per kernel (launch and tail).")           \
  X(host_op_us, 0.01, 10000.0, "us",                                                              \
    "Host (CPU) time per dispatched operator when replaying an ex-situ trace (`import cpu`) for " \
    "operators called from Python (forward, optimizer): eager PyTorch launches kernels no "       \
    "faster.")                                                                                    \
  X(host_autograd_us, 0.01, 10000.0, "us",                                                        \
    "The same for operators the C++ autograd engine dispatches (backward) and for DDP's "         \
    "reducer.")                                                                                   \
  X(host_module_us, 0.01, 100000.0, "us",                                                         \
    "Extra host time per layer-level operator called from Python (conv2d, batch_norm, linear, "   \
    "layer_norm, dropout, ...: the nn.Module call around it).")                                   \
  X(conv_eff, 0.01, 1.0, "",                                                                      \
    "Efficiency of a convolution (as implicit GEMM) relative to a GEMM of the same shape.")       \
  X(norm_eff, 0.01, 1.0, "",                                                                      \
    "Speed of batch / layer normalisation kernels (per-channel reductions) relative to "          \
    "streaming memory-bound kernels, for ex-situ traces.")                                        \
  X(p2p_latency_us, 0.01, 10000.0, "us",                                                          \
    "Latency of a point-to-point transfer (the collective model's p2p and all-to-all).")          \
  X(optimizer_bytes_per_param, 1.0, 256.0, "bytes",                                               \
    "HBM traffic of the optimizer step per parameter.")                                           \
  X(interval_dense, 0.0001, 5.0, "",                                                              \
    "Half-width w (log space) of the 90 % prediction interval of a dense model's step time t: "  \
    "[t e^-w, t e^w]. `stepcast validate --fit-interval` fits it from the calibration rows' "     \
    "held-out errors (docs/VALIDATION.md, section Prediction intervals).")                       \
  X(interval_moe, 0.0001, 5.0, "",                                                                \
    "The same for mixture-of-experts models (fitted on the MoE calibration rows).")              \
  X(interference_gemm, 0.0001, 10.0, "",                                                          \
    "Interference `constant`: slowdown s of GEMMs while communication runs on the GPU, T * (1 + " \
    "r * s) for a fraction r of overlapped work (default 0.0297, fitted on the HTA traces: "     \
    "src/cost/interf.c).")                                                                        \
  X(interference_attn, 0.0001, 10.0, "",                                                          \
    "The same for fused attention kernels (default 0.0185).")                                     \
  X(interference_elementwise, 0.0001, 10.0, "",                                                   \
    "The same for memory-bound elementwise kernels (default 0.0451).")                            \
  X(interference_norm, 0.0001, 10.0, "",                                                          \
    "The same for norms, softmax, reductions and the loss (default 0.0001).")                     \
  X(interference_optimizer, 0.0001, 10.0, "",                                                     \
    "The same for the optimizer step (default 0.0185).")                                          \
  X(interference_comm, 0.0001, 10.0, "",                                                          \
    "Communication slowdown while compute runs on the GPU (models constant and learned; default " \
    "0.05).")

/* X(key, member, lo, hi, fitted, prior, unit, doc): the parameters of the
 * "nccl" collective model (src/cost/comm_nccl.c, docs/COMM.md), members of
 * sc_cost_params.nccl. `fitted` marks what `stepcast calibrate --nccl-tests`
 * moves; the others are facts or assumptions that nccl-tests all-reduce logs
 * cannot identify. `prior` is where the fit's weak pull goes for what the
 * rows leave flat: NCCL's own figure where it has one, else a physical
 * estimate (the doc says which). The model's point-to-point latency is the
 * cost key p2p_latency_us. */
#define SC_NCCL_KEYS(X)                                                                           \
  X(nccl_nvlink_eff, nvlink_eff, 0.05, 1.0, 1, 0.78, "",  \
    "Simple-protocol link efficiency of NVLink: ring bandwidth / NVLink per direction (prior: " "NCCL's A100 ceiling, 235 of 300 GB/s)")\
  X(nccl_nic_eff, nic_eff, 0.05, 1.0, 1, 0.96, "",  \
    "Simple-protocol link efficiency of the NICs: ring bandwidth / line rate of the rails " "(prior: NCCL's 24 of 25 GB/s)")\
  X(nccl_launch_us, launch_us, 0.0, 100.0, 0, 0.0, "us",  \
    "fixed cost of every collective call beyond NCCL's base latency (Echo's alpha)")\
  X(nccl_channel_us, channel_us, 0.0, 20.0, 1, 1.0, "us",  \
    "fixed cost per channel (one CTA) a ring call runs on beyond the first; NCCL runs fewer " "channels for small calls (prior: 1 us)")\
  X(nccl_tree_channel_us, tree_channel_us, 0.0, 20.0, 1, 1.0, "us",  \
    "the same for a tree call (prior: 1 us)")\
  X(nccl_base_scale, base_scale, 0.02, 20.0, 1, 1.0, "",  \
    "multiplier of NCCL's LL128 and Simple base latencies (ring 14 / 8.4, tree 14 / 8.4 us); LL " "keeps NCCL's (6.6, tree 6.8 us)")\
  X(nccl_intra_hop_scale, intra_hop_scale, 0.02, 50.0, 0, 1.0, "",  \
    "extra multiplier of a ring's NVLink steps (priced as a tree's chain steps) and of the " "NVLink latencies of NVLS and CollNet")\
  X(nccl_tree_hop_scale, tree_hop_scale, 0.02, 50.0, 1, 1.0, "",  \
    "multiplier of NCCL's NVLink step latencies of a tree's chain (LL 0.6, LL128 1.25, Simple 4 " "us); a ring's steps over NVLink cost the same")\
  X(nccl_net_hop_scale, net_hop_scale, 0.02, 50.0, 1, 1.0, "",  \
    "multiplier of NCCL's LL network step latencies (ring 2.7, tree 5 us)")\
  X(nccl_net_bulk_hop_scale, net_bulk_hop_scale, 0.02, 50.0, 1, 1.0, "",  \
    "multiplier of NCCL's LL128 and Simple network step latencies (ring 4 / 14, tree 8.5 / 14 " "us)")\
  X(nccl_ll_frac, ll_frac, 0.01, 1.0, 1, 0.25, "",  \
    "LL link rate / Simple (prior: NCCL's tuner, 1/4 for rings; trees 1/3.8 of the tree rate)")\
  X(nccl_ll_stream_gbps, ll_stream_gbps, 0.1, 100.0, 1, 5.0, "GB/s",  \
    "LL rate of one channel (thread block); a call's LL data moves at most at this times the " "channels it starts (prior: NCCL's LL rate of one A100 channel, 58.75 GB/s over 12)")\
  X(nccl_ll_net_gbps, ll_net_gbps, 0.05, 100.0, 1, 5.0, "GB/s",  \
    "LL across the network: each crossing stores and forwards the share at this rate (prior: as " "nccl_ll_stream_gbps)")\
  X(nccl_ll128_frac, ll128_frac, 0.05, 1.0, 1, 0.92, "",  \
    "LL128 bandwidth / Simple (prior: NCCL's tuner, 0.92; 120 of 128 bytes are data)")\
  X(nccl_tree_frac, tree_frac, 0.05, 1.0, 1, 0.92, "",  \
    "tree bandwidth / ring (prior: NCCL's tuner, 0.92)")\
  X(nccl_pipe_kib, pipe_kib, 1.0, 65536.0, 1, 512.0, "KiB",  \
    "Simple chunk over all channels: each ring or tree step adds one chunk time (prior: one " "NCCL Simple step, 512 KiB)")\
  X(nccl_mem_passes, mem_passes, 0.0, 20.0, 1, 1.0, "",  \
    "passes over the buffer through HBM that the links do not hide (prior: 1, the output write)")\
  X(nccl_nvls_eff, nvls_eff, 0.0, 2.0, 0, 0.0, "",  \
    "NVLS all-reduce bus bandwidth / NVLink per direction; 0: no NVLS")\
  X(nccl_a2a_peer_us, a2a_peer_us, 0.0, 100.0, 0, 0.0, "us",  \
    "all-to-all cost per peer (n-1 sends and receives are posted)")\
  X(nccl_net_overhead_us, net_overhead_us, 0.0, 100.0, 0, 0.0, "us",  \
    "floor of a ring step across nodes (NCCL: 1 us Intel hosts; x3 Simple)")\
  X(nccl_channels, channels, 1.0, 64.0, 0, 0.0, "",  \
    "NCCL channels of an 8-GPU node; scales the per-channel bandwidth ceilings")\
  X(nccl_sharp, sharp, 0.0, 1.0, 0, 0.0, "",  \
    "1: in-network reduction (CollNet/SHARP), enables CollNet and multi-node NVLS")\
  X(nccl_select, select, 1.0, 2.0, 0, 0.0, "",  \
    "who picks algorithm and protocol: 1 the fastest calibrated candidate, 2 NCCL 2.8-2.12's " "own tuning model (the calibrated model prices its pick)")\
  X(nccl_host_launch_us, host_launch_us, 0.0, 50.0, 1, 4.5, "us",  \
    "host time to launch one GPU's share of a call: nccl-tests -g G (one thread, G GPUs) cannot " "go faster than G times it; benchmarks only, not the engine (prior: 4.5 us, the 1-GPU log)")\
  X(nccl_reduce_passes, reduce_passes, 0.0, 20.0, 1, 0.5, "",  \
    "HBM passes over every reduced byte that the links do not hide (the reduce kernel reads two " "operands and writes one; all-reduce and reduce-scatter pay it, all-gather does not; prior: 0.5)")\
  X(nccl_setup_us, setup_us, 0.0, 10000.0, 0, 0.0, "us",  \
    "first-call setup per rank and remote node (connections made on first use): a call's first " "run costs this x ranks x (nodes - 1) once, paid by nccl-tests' first row, never by the engine; " "calibrate --nccl-tests sets it from first-call rows")\
  X(nccl_ring_mix, ring_mix, 1.0, 64.0, 1, 8.0, "",  \
    "exponent k of the smooth minimum (b_nvl^-k + b_net^-k)^(-1/k) of NVLink and network rates " "of a ring or tree across nodes: both links stream through the same GPU (prior: 8)")

/* X(name, doc): the features of the learned interference model
 * (src/cost/interf.c), in coefficient order; the calibration key of feature
 * NAME is `interference_w_NAME`, a member NAME of sc_cost_params.interference_w,
 * in [SC_INTERF_COEF_LO, SC_INTERF_COEF_HI]. The five class indicators come
 * first, in SC_OP_* order, and act as per-class intercepts. */
#define SC_INTERF_FEATURES(X)                                                               \
  X(gemm, "1 for GEMM kernels (class intercept)")                                           \
  X(attn, "1 for fused attention kernels (class intercept)")                                \
  X(elementwise, "1 for memory-bound elementwise kernels (class intercept)")                \
  X(norm, "1 for norms, softmax and reductions (class intercept)")                          \
  X(optimizer, "1 for optimizer kernels (class intercept)")                                 \
  X(log_dur, "log10(kernel duration alone / 100 us), clamped to [-2, 2]")                   \
  X(all_gather, "1 when the overlapping op is an all-gather (all-reduce is the base)")      \
  X(reduce_scatter, "1 when it is a reduce-scatter")                                        \
  X(p2p, "1 when it is a send/recv (NCCL also runs all-to-all as send/recv)")               \
  X(other_coll, "1 when it is a broadcast or another collective")                           \
  X(size_known, "1 when the message size is known (always in simulation)")                  \
  X(log_bytes, "log10(message bytes / 1 MiB), clamped to [-4, 4]; 0 when unknown")          \
  X(inter_node, "1 when the communication group spans nodes")                               \
  X(log_group, "log2(ranks in the group / 2); 0 for two ranks or when unknown")

/* Bounds of a learned interference coefficient. */
#define SC_INTERF_COEF_LO (-10.0)
#define SC_INTERF_COEF_HI 10.0

#endif /* SC_CALIB_KEYS_H */
