/*
 * config_int.h: the single table of configuration fields (section, key, type,
 * struct member, unit, default, meaning) behind YAML loading, --set overrides,
 * field_line bookkeeping and docs/CONFIG.md, plus the internal helpers other
 * modules and the CLI use to name, locate and print fields. Not API.
 */
#ifndef SC_CONFIG_INT_H
#define SC_CONFIG_INT_H

#include "base/sc_int.h"

/*
 * X(section, key, type, member, unit, default, lo, hi, doc)
 *
 * section/key: the YAML spelling (`parallel:` / `tp:`) and the --set spelling
 *   (`parallel.tp=8`); keys are the struct member names.
 * type: POSINT (integer >= 1), COUNT (integer >= 0, 0 = derived), BOOL, REAL
 *   (real >= 0), FRAC (real in [0, 1]), LABEL (free string), GPU (hardware
 *   preset name), PRESET (model preset name), HF (a config.json path, read
 *   by the loader, not parse_field), or one of the enum types
 *   ACTIVATION, PRECISION, RECOMPUTE, ATTENTION, SCHEDULE, INTERFERENCE, CP_COMM,
 *   FP8_RECIPE, MOE_DISPATCHER.
 * member: the sc_config member the field lives in.
 * default: text parsed by sc_config_default ("" = left as the preset sets it).
 * lo, hi: the physical range of a number (integers and reals): a value
 *   outside it is an error naming the range. 0 of a COUNT or REAL field whose
 *   range starts above 0 means "derived" and is always accepted. Unused (0,
 *   0) for other types.
 * The position of a row is its field index into sc_config.field_line.
 */
#define SC_CONFIG_FIELDS(X)                                                                      \
  X(model, preset, PRESET, model.name, "", "", 0, 0,                                          \
    "Model preset (see Model presets). Loaded before the other model keys, which "               \
    "override it whatever their order in the file. A model needs a preset, a model.hf_config, or " \
    "all of layers, hidden, heads, vocab and seq_len.")                                             \
  X(model, hf_config, HF, model.hf_config, "", "", 0, 0,                                                   \
    "A HuggingFace transformers config.json (path relative to the YAML file; --set and `run "    \
    "--hf`: to the working directory) giving the shape: layers, hidden, heads, kv_heads, ffn, "   \
    "vocab, head_dim, activation, tied embeddings (and MoE / MLA fields where the build models " \
    "them). Loaded before the other model keys, which override it; not with model.preset. The "  \
    "sequence length is not taken from the file: give model.seq_len (docs/CONFIG.md, section "   \
    "HuggingFace config.json).")                                                                 \
  X(model, name, LABEL, model.name, "", "", 0, 0,                                                      \
    "Free label used in reports; a preset sets it to the preset name.")                          \
  X(model, layers, POSINT, model.layers, "layers", "", 1, 4096, "Transformer layers L.")                  \
  X(model, hidden, POSINT, model.hidden, "elements", "", 1, 262144,                                         \
    "Hidden size h; must be a multiple of model.heads.")                                         \
  X(model, heads, POSINT, model.heads, "heads", "", 1, 4096, "Attention heads a.")                        \
  X(model, kv_heads, COUNT, model.kv_heads, "heads", "0", 1, 4096,                                         \
    "Key/value heads g for grouped-query attention; 0 = model.heads "                            \
    "(multi-head attention). Must divide model.heads.")                                          \
  X(model, ffn_hidden, COUNT, model.ffn_hidden, "elements", "0", 1, 1048576,                                  \
    "FFN inner size f; 0 = 4h for gelu, 8h/3 rounded up to a multiple of 256 "                   \
    "for swiglu (Llama / Megatron-LM rounding).")                                                \
  X(model, vocab, POSINT, model.vocab, "tokens", "", 1, 16777216,                                             \
    "Vocabulary size V (padding for tensor parallelism is the simulator's "                      \
    "job).")                                                                                     \
  X(model, seq_len, POSINT, model.seq_len, "tokens", "", 1, 16777216, "Sequence length s.")                   \
  X(model, head_dim, COUNT, model.head_dim, "elements", "0", 1, 4096,                                    \
    "Attention head dimension d (Megatron kv_channels); 0 = hidden / heads. Given, the "         \
    "query width heads * d may differ from hidden (Qwen3, Gemma).")                               \
  X(model, activation, ACTIVATION, model.activation, "", "swiglu", 0, 0,                                     \
    "FFN activation: gelu (two GEMMs), swiglu (gated, three GEMMs) or relu2 (squared ReLU, "      \
    "not gated: two GEMMs, Nemotron). Default swiglu, the FFN of current open models (Llama, "  \
    "Mistral, Qwen, DeepSeek); GPT-2/3-style models need gelu.")                                                          \
  X(model, dropout, FRAC, model.dropout, "", "0", 0, 1,                                                 \
    "Hidden and attention dropout probability: its masks are stored for the backward (and, "     \
    "with unfused attention, its kernels run). Presets: 0.1 for GPT-3 (Megatron-LM's default), 0 " \
    "for Llama; default 0. Unless given, a model with a gated or squared-ReLU FFN trains without " \
    "dropout, as the Llama, Mistral and Nemotron recipes do.")                                            \
  X(model, tied_embeddings, BOOL, model.tied_embeddings, "", "false", 0, 0,                                 \
    "The LM head shares the input embedding matrix.")                                            \
  X(model, moe_experts, COUNT, model.moe_experts, "experts", "0", 1, 65536,                           \
    "Routed experts E of each mixture-of-experts layer (Megatron --num-experts); 0 = a dense "    \
    "model. docs/MOE.md.")                                                                       \
  X(model, moe_topk, COUNT, model.moe_topk, "experts", "0", 1, 65536,                                 \
    "Experts each token is routed to k (--moe-router-topk); 0 = 2, Megatron-LM's default. "      \
    "At most model.moe_experts.")                                                                \
  X(model, moe_ffn_hidden, COUNT, model.moe_ffn_hidden, "elements", "0", 1, 1048576,                  \
    "FFN inner size of one expert (--moe-ffn-hidden-size); 0 = model.ffn_hidden. Gated like the " \
    "dense FFN (model.activation).")                                                             \
  X(model, moe_shared_experts, COUNT, model.moe_shared_experts, "experts", "0", 0, 65536,             \
    "Shared experts every token goes through beside the routed ones, each moe_ffn_hidden wide "   \
    "(DeepSeek; Megatron --moe-shared-expert-intermediate-size = this x moe_ffn_hidden), run as " \
    "a tensor-parallel dense MLP (see parallel.moe_shared_expert_overlap).")                               \
  X(model, moe_dense_layers, COUNT, model.moe_dense_layers, "layers", "0", 0, 4096,                  \
    "Leading layers with a dense FFN of model.ffn_hidden (DeepSeek-V3: 3; Megatron "              \
    "--moe-layer-freq [0]*k+[1]*(L-k)); the others are MoE layers.")                              \
  X(model, moe_layer_freq, COUNT, model.moe_layer_freq, "layers", "0", 1, 4096,                    \
    "MoE in every k-th layer: layer l (0-based) after the leading dense ones has the MoE FFN "    \
    "when (l + 1) is a multiple of k, as Hugging Face's decoder_sparse_step counts (Megatron's "  \
    "integer --moe-layer-freq makes layer 0 MoE instead); the others keep the dense FFN. 0 = 1, " \
    "every layer.")                                                                              \
  X(model, moe_capacity_factor, REAL, model.moe_capacity_factor, "", "0", 0.01, 1024,               \
    "Token dropping: an expert takes at most this times its balanced share of tokens "            \
    "(--moe-expert-capacity-factor); 0 = dropless (every routed token is computed).")             \
  X(model, moe_router_balance, REAL, model.moe_router_balance, "", "0", 1, 1024,                    \
    "Routing skew: tokens of the hottest expert over the mean (1 = balanced, as Megatron's "     \
    "--moe-router-force-load-balancing). The EP rank holding the hottest expert (and average "   \
    "ones beside it) sets the pace of every expert GEMM and all-to-all: its load is (r + n - 1) " \
    "/ n times the mean with n local experts, capped by moe_capacity_factor. 0 = 1.")             \
  X(model, mla_kv_lora_rank, COUNT, model.mla_kv_lora_rank, "elements", "0", 1, 65536,           \
    "Multi-head latent attention (DeepSeek-V2/V3): width of the compressed K/V latent "          \
    "(kv_lora_rank); 0 = ordinary attention. With it model.head_dim is the no-RoPE query/key "   \
    "head dim and kv_heads must equal heads. docs/MOE.md.")                                     \
  X(model, mla_q_lora_rank, COUNT, model.mla_q_lora_rank, "elements", "0", 0, 65536,             \
    "With MLA: width of the compressed query (q_lora_rank); 0 = queries projected directly "     \
    "from the hidden state.")                                                                    \
  X(model, mla_rope_dim, COUNT, model.mla_rope_dim, "elements", "0", 1, 4096,                     \
    "With MLA: the decoupled RoPE query/key head dim (qk_rope_head_dim); 0 = 64 (DeepSeek-V2/V3).") \
  X(model, mla_v_head_dim, COUNT, model.mla_v_head_dim, "elements", "0", 1, 4096,                 \
    "With MLA: the value head dim (v_head_dim); 0 = model.head_dim.")                              \
  X(training, global_batch, COUNT, training.global_batch, "sequences", "0", 1, 16777216,         \
    "Global batch B per optimizer step; 0 = micro_batch * dp (Megatron-LM's default: one "      \
    "micro-batch per data-parallel rank, so with pp > 1 the pipeline runs nearly empty).")                                                        \
  X(training, micro_batch, POSINT, training.micro_batch, "sequences", "1", 1, 65536,                       \
    "Micro-batch b; B must be a multiple of b * parallel.dp.")                                   \
  X(training, precision, PRECISION, training.precision, "", "bf16", 0, 0,                              \
    "Compute dtype of GEMMs and attention.")                                                     \
  X(training, recompute, RECOMPUTE, training.recompute, "", "none", 0, 0,                              \
    "Activation recomputation: none, selective (attention core, Korthikanti "                    \
    "et al. 2022), full (whole layer) or op_sac (torchtitan's op-level selective activation "    \
    "checkpointing: per layer the outputs of every other matmul (wq, wv, w1, w2 of a Llama "     \
    "block), of the attention kernel (with its log-sum-exp) and of the sequence-parallel "       \
    "reduce-scatters are kept; wk, wo, w3 and the norms, RoPE, activation and residuals are "    \
    "re-run in the backward. Dense models with fused attention only, and sequence_parallel "     \
    "with tp > 1, as torchtitan's TP plan runs; docs/MEMORY.md).")                               \
  X(training, recompute_modules, LABEL, training.recompute_modules, "", "core_attn", 0, 0,          \
    "With recompute selective: the parts re-run in the backward, Megatron-LM's "                 \
    "--recompute-modules names separated by commas: core_attn (the attention core, Korthikanti " \
    "et al. 2022), layernorm (the two norms), moe_act (the experts' activation), moe (the whole " \
    "MoE FFN, its all-to-alls included), mla_up_proj (multi-head latent attention's query and "  \
    "K/V up projections, as DeepSeek-V3 trains). docs/MOE.md.")                                  \
  X(training, attention, ATTENTION, training.attention, "", "flash", 0, 0,                            \
    "Attention implementation: flash (FlashAttention-2: one fused kernel, the s x s scores "     \
    "never reach HBM, causal masking halves the work), cudnn (cuDNN fused attention, the same "  \
    "work in faster kernels on Hopper: Transformer Engine's FusedAttention, which Megatron-Core " \
    "and NeMo run there; calibration.cudnn_attn_eff) or unfused (Megatron-LM before "           \
    "FlashAttention, 2021-22: batched QK^T and PV GEMMs over the full s x s "                    \
    "scores, fused scale-mask-softmax and dropout kernels streaming them through "               \
    "HBM; selective recompute re-runs this part).")                                              \
  X(training, fp8_recipe, FP8_RECIPE, training.fp8_recipe, "", "delayed", 0, 0,                        \
    "With precision fp8: how GEMM inputs are scaled. delayed (Transformer Engine's default: "     \
    "scales from an amax history, one cast per input), tensorwise (current scaling: an amax "     \
    "reduction over the tensor, then the cast; torchao's default) or rowwise (one scale per row, " \
    "torchao rowwise: amax per row, cast, and the weight transposed and cast again).")            \
  X(training, fp8_attention, BOOL, training.fp8_attention, "", "false", 0, 0,                         \
    "With precision fp8: attention kernels in fp8 as well (Transformer Engine fp8 DPA); "          \
    "default: attention in bf16 as the recipes run it.")                                         \
  X(training, fp32_loss_grads, BOOL, training.fp32_loss_grads, "", "false", 0, 0,                   \
    "The loss on fp32 logits with their fp32 gradients (torchtitan casts the [tokens, vocab] "   \
    "logits to fp32 for its cross-entropy): on the last stage the loss backward holds the fp32 " \
    "gradients of the log-probabilities and of the logits, 8 bytes per logit (12 with tp > 1: " \
    "torch's loss_parallel backward), instead of Megatron-LM's in-place 16-bit one "             \
    "(docs/MEMORY.md).")                                                                         \
  X(training, fused_projections, BOOL, training.fused_projections, "", "true", 0, 0,                 \
    "One GEMM for the query, key and value projections and one for a gated FFN's gate and up "   \
    "projections (Megatron-LM's linear_qkv and linear_fc1). false: the separate linear layers "  \
    "of Hugging Face's and torchtitan's Llama (q/k/v and gate/up, wq/wk/wv and w1/w3), each "     \
    "reading the (gathered) input itself, small ones bound by that read, and the backward "      \
    "summing their input grads (one kernel; an add per extra projection with training.eager). " \
    "Time only; MLA's projections are their own.")                                              \
  X(training, eager, BOOL, training.eager, "", "false", 0, 0,                                         \
    "The layers' elementwise work as eager PyTorch runs it (no torch.compile, no fused "          \
    "kernels; torchtitan without --compile, Hugging Face models) on a gated-FFN model, whose "   \
    "norm is an RMSNorm and whose positions are rotary: the RMSNorm as separate fp32 kernels "    \
    "(upcast, pow, mean, rsqrt, multiply, downcast, weight; 14 in backward), the rotary "         \
    "embedding of the queries and keys as three (upcast, complex multiply, downcast) each way, "  \
    "a dense FFN's SwiGLU as SiLU and product (MoE experts keep their kernels). Default false: "  \
    "fused kernels, as Megatron-LM, Transformer "                                                \
    "Engine and torch.compile run them (the rotary embedding not priced). LayerNorm / GELU "      \
    "models are unchanged (eager PyTorch runs them as single kernels too). Time only: memory "     \
    "counts the fused layer's saved activations (docs/VALIDATION.md, known error sources).")      \
  X(training, optimizer_offload, FRAC, training.optimizer_offload, "fraction", "0", 0, 1,          \
    "Fraction of the optimizer states (Adam moments and the fp32 master weights) kept in host "   \
    "memory instead of the GPU's: Megatron-LM --optimizer-cpu-offload with "                     \
    "--optimizer-offload-fraction, ZeRO-Offload (1). The device keeps the rest; the step moves " \
    "the offloaded part's data over the host link (cluster.host_link_gbps) on a copy stream, "   \
    "see optimizer_offload_cpu_step. Not with zero_stage 3 (FSDP's own offload is not "           \
    "modelled). docs/MEMORY.md, \"Offload to host memory\".")                                      \
  X(training, optimizer_offload_cpu_step, BOOL, training.optimizer_offload_cpu_step, "", "true", 0, 0, \
    "With optimizer_offload: the offloaded part's Adam step runs on the CPU (ZeRO-Offload's "    \
    "CPU-Adam, Megatron-LM's HybridDeviceOptimizer): its fp32 gradients are copied device to "    \
    "host, the step streams 30 bytes a parameter (fp32 master, gradient and moments read, "      \
    "master and moments written, the 16-bit copy; 28 in fp32) through host memory at "           \
    "cluster.host_mem_gbps while the GPU steps its own part, and the updated parameters are "     \
    "copied back. false: the offloaded states are copied to the GPU for a GPU step and back.")  \
  X(training, activation_offload_layers, COUNT, training.activation_offload_layers, "layers", "0", 1, 4096, \
    "Layers whose stored activations go to host memory (Megatron-LM --cpu-offloading with "      \
    "--cpu-offloading-num-layers; the first N layers): each one's are copied to the host after "  \
    "its forward and back before its backward, on a copy stream beside the compute; a layer's "   \
    "forward waits for the copy of the layer two before it, a layer's backward for its reload, "  \
    "which starts with the backward of the layer after it. As Megatron-Core requires: fewer "    \
    "than model.layers, pp = 1, no recompute; 1f1b or gpipe. 0 = none.")             \
  X(training, tokens, REAL, training.tokens, "tokens", "0", 0, 1e18,                              \
    "Tokens of the whole training run (e.g. 3e11 for GPT-3's 300B); with it the result gives "   \
    "time_to_train_days and gpu_hours (and cost with cluster.price_per_gpu_hour). 0 = not given.") \
  X(training, checkpoint_interval, COUNT, training.checkpoint_interval, "steps", "0", 0, 1e9,      \
    "Steps between checkpoints; 0 = none. With variation.failures or variation.gpu_mtbf_hours "  \
    "a failure loses the steps since the last checkpoint (docs/WHATIF.md).")                      \
  X(training, checkpoint_save_s, REAL, training.checkpoint_save_s, "s", "0", 0, 1e6,              \
    "Time a checkpoint adds to the step that writes it (0: asynchronous or none).")              \
  X(training, checkpoint_load_s, REAL, training.checkpoint_load_s, "s", "0", 0, 1e6,              \
    "Time to read the last checkpoint back after a failure.")                                    \
  X(training, restart_s, REAL, training.restart_s, "s", "0", 0, 1e6,                              \
    "Time from a failure to training again, not counting the checkpoint load (detection, "        \
    "rescheduling, process start, NCCL init).")                                                   \
  X(parallel, tp, POSINT, parallel.tp, "GPUs", "1", 1, 1024,                                              \
    "Tensor-parallel size; must divide model.heads and model.ffn_hidden, and "                   \
    "model.kv_heads must divide it or be divisible by it.")                                      \
  X(parallel, pp, POSINT, parallel.pp, "GPUs", "1", 1, 1024,                                             \
    "Pipeline-parallel stages. Without pp_first_layers / pp_last_layers the layers split "        \
    "evenly when pp * vpp divides them; otherwise the first and last stages take fewer (see "     \
    "pp_first_layers).")                                                                         \
  X(parallel, pp_first_layers, COUNT, parallel.pp_first_layers, "layers", "0", 1, 4096,               \
    "Transformer layers on the first stage (Megatron --decoder-first-pipeline-num-layers); the "  \
    "stages between share the rest evenly. 0 = even split, or when pp * vpp does not divide the " \
    "layers, the split with equal middle stages of ceil(layers / pp) layers and the rest shared " \
    "by the first and last stage (Llama 3 405B: 126 layers over 16 stages = 7 + 14 x 8 + 7). "    \
    "With vpp > 1 each stage's layers split evenly over its chunks; when the first / last "       \
    "stage's do not, only its outermost chunk is short (torchtitan's split: 15 / 16 x 6 / 15 "    \
    "over pp 8 x vpp 2 is 7 + 8 x 14 + 7 per chunk).")                                            \
  X(parallel, pp_last_layers, COUNT, parallel.pp_last_layers, "layers", "0", 1, 4096,                 \
    "Transformer layers on the last stage (--decoder-last-pipeline-num-layers); 0 = as "          \
    "pp_first_layers says.")                                                                     \
  X(parallel, pp_embedding_in_split, BOOL, parallel.pp_embedding_in_split, "", "false", 0, 0,         \
    "The embedding counts as one layer when the layers are split over stages, so the first "      \
    "stage holds one transformer layer fewer (Megatron --account-for-embedding-in-pipeline-split)."\
    "")                                                                                          \
  X(parallel, pp_loss_in_split, BOOL, parallel.pp_loss_in_split, "", "false", 0, 0,                   \
    "The LM head and loss count as one layer in the split (Megatron "                            \
    "--account-for-loss-in-pipeline-split).")                                                    \
  X(parallel, pp_keep_outputs, BOOL, parallel.pp_keep_outputs, "", "false", 0, 0,                   \
    "The last pipeline stage keeps every micro-batch's output until the step ends, as "          \
    "torch.distributed.pipelining does (its stage appends each last-stage forward output, the "  \
    "16-bit logits, to output_chunks to merge them after the step; torchtitan's PP runs): m "    \
    "micro-batches of e * s * b * V / t bytes on the last stage at its peak. No effect with "    \
    "pp = 1 (docs/MEMORY.md).")                                                                  \
  X(parallel, dp, COUNT, parallel.dp, "GPUs", "0", 1, 16777216,                                               \
    "Data-parallel size; 0 = cluster.num_gpus / (tp * pp * cp).")                                \
  X(parallel, cp, POSINT, parallel.cp, "GPUs", "1", 1, 1024,                                              \
    "Context-parallel size: the sequence is split over cp ranks (two load-balanced causal "       \
    "chunks each); they also join the data-parallel gradient reduction (dp x cp).")              \
  X(parallel, cp_comm, CP_COMM, parallel.cp_comm, "", "p2p", 0, 0,                                    \
    "How context-parallel attention sees the other ranks' keys and values: p2p (a ring of K/V "   \
    "chunks, cp - 1 exchanges each overlapped with a partial attention; backward also "           \
    "circulates dK/dV), a2a (Ulysses: all-to-all over heads before and after attention), "       \
    "allgather (K/V all-gathered, dK/dV reduce-scattered) or a2a+p2p (all-to-all among the CP "   \
    "ranks of a node, ring across nodes).")                                                      \
  X(parallel, vpp, POSINT, parallel.vpp, "chunks", "1", 1, 64,                                          \
    "Model chunks per pipeline stage; above 1 selects the interleaved "                          \
    "schedule unless parallel.schedule is given.")                                               \
  X(parallel, sequence_parallel, BOOL, parallel.sequence_parallel, "", "false", 0, 0,                  \
    "Megatron sequence parallelism over the TP group (ignored when tp = 1; "                     \
    "model.seq_len must be a multiple of tp).")                                                  \
  X(parallel, distributed_optimizer, BOOL, parallel.distributed_optimizer, "", "false", 0, 0,          \
    "Shard optimizer state over the DP group (ZeRO-1).")                                         \
  X(parallel, zero_stage, COUNT, parallel.zero_stage, "", "0", 0, 3,                                     \
    "DeepSpeed ZeRO stage 0-3 over the data-parallel ranks (dp x cp): 1 shards optimizer states " \
    "(implies distributed_optimizer), 2 also gradients (communication as stage 1: "              \
    "reduce-scatter + all-gather), 3 also parameters: PyTorch FSDP / ZeRO-3, each layer's "       \
    "parameters all-gathered before its forward and backward and its gradients reduce-scattered " \
    "after its backward, every micro-batch.")                                                    \
  X(parallel, fsdp_shard, COUNT, parallel.fsdp_shard, "GPUs", "0", 1, 16777216,                       \
    "With zero_stage 3: data-parallel ranks a parameter is sharded over; a divisor of dp below it " \
    "is hybrid sharding (HSDP: shard within groups of this size, all-reduce gradients across "   \
    "them). 0 = dp (full sharding).")                                                            \
  X(parallel, fsdp_reshard_after_forward, BOOL, parallel.fsdp_reshard_after_forward, "", "true", 0, 0, \
    "With zero_stage 3: free the gathered parameters after each layer's forward and gather them " \
    "again for its backward (FSDP FULL_SHARD); false keeps them (SHARD_GRAD_OP, ZeRO-2-like "     \
    "traffic, more memory).")                                                                    \
  X(parallel, fsdp_prefetch, COUNT, parallel.fsdp_prefetch, "layers", "1", 0, 8,                      \
    "With zero_stage 3: layers whose parameter all-gather is issued ahead of the layer "          \
    "computing (FSDP forward/backward prefetch); 0 = gather each layer only when it starts.")      \
  X(parallel, fsdp_fp8_allgather, BOOL, parallel.fsdp_fp8_allgather, "", "false", 0, 0,                \
    "With zero_stage 3 and precision fp8: gather the weights in fp8 (torchao "                   \
    "enable_fsdp_float8_all_gather), half the bytes of bf16.")                                   \
  X(parallel, tp_fp8_allgather, BOOL, parallel.tp_fp8_allgather, "", "false", 0, 0,                    \
    "With precision fp8 and sequence parallelism: each FP8 linear's input is cast on its "        \
    "sequence shard and all-gathered in fp8 (1 byte per element), forward and for the "           \
    "row-parallel linears' output grads backward, so the cast covers 1/tp of the rows "           \
    "(torchao's Float8ColwiseParallel / Float8RowwiseParallel, which torchtitan uses with the "     \
    "tensorwise recipe); false: gathered in bf16, then cast whole.")                            \
  X(parallel, schedule, SCHEDULE, parallel.schedule, "", "1f1b", 0, 0,                                 \
    "Pipeline schedule: 1f1b, gpipe, interleaved (Megatron's interleaved 1F1B, vpp > 1, any "     \
    "micro-batch count: a last group of fewer than pp micro-batches is allowed as in Megatron's " \
    "flexible interleaving), zb-h1 or zbv (zero-bubble, Qi et al. 2024: the backward split into " \
    "input-grad and weight-grad passes, weight grads filling the bubbles; zbv places two chunks " \
    "per stage in a V and needs vpp = 2 or unset), dualpipe (DeepSeek-V3's DualPipe: every "     \
    "stage holds stage i of one model copy and stage pp-1-i of a mirrored one, micro-batches "   \
    "fed from both ends, forward and backward chunks of two micro-batches overlapped so that "   \
    "the EP all-to-alls hide behind compute; pp even, vpp 1, an even number of at least 2 pp "   \
    "micro-batches) or dualpipev (DualPipe-V, its cut-in-half form on zbv's V placement, at "    \
    "least 2 pp micro-batches).")                                                                \
  X(parallel, overlap_grad_reduce, BOOL, parallel.overlap_grad_reduce, "", "false", 0, 0,       \
    "Overlap the DP gradient reduction with the backward pass (off by default, as Megatron-LM's " \
    "--overlap-grad-reduce; FSDP / ZeRO-3 always overlaps its reduce-scatters).")                                 \
  X(parallel, overlap_param_gather, BOOL, parallel.overlap_param_gather, "", "false", 0, 0,            \
    "Overlap the distributed optimizer's parameter all-gather with the "                         \
    "forward pass.")                                                                             \
  X(parallel, tp_comm_overlap, BOOL, parallel.tp_comm_overlap, "", "false", 0, 0,                    \
    "Pipeline the sequence-parallel all-gathers and reduce-scatters with the "                   \
    "GEMMs next to them, chunk by chunk (Transformer Engine userbuffers, "                       \
    "Megatron-LM --tp-comm-overlap); needs sequence_parallel.")                                  \
  X(parallel, ep, POSINT, parallel.ep, "GPUs", "1", 1, 65536,                                          \
    "Expert-parallel size: the experts of an MoE layer are split over ep ranks that exchange "    \
    "tokens. Must divide model.moe_experts; ep * etp must divide tp * cp * dp (Megatron's expert " \
    "grid: etp fastest, then ep, then the expert-data-parallel ranks).")                          \
  X(parallel, etp, COUNT, parallel.etp, "GPUs", "0", 1, 1024,                                         \
    "Expert tensor-parallel size (--expert-tensor-parallel-size): each expert's FFN split over "  \
    "etp ranks; 0 = parallel.tp (Megatron-LM's default).")                                        \
  X(parallel, moe_dispatcher, MOE_DISPATCHER, parallel.moe_dispatcher, "", "alltoall", 0, 0,        \
    "MoE token dispatch over the EP group: alltoall (NCCL all-to-all of the k routed copies), "   \
    "allgather (every token gathered, outputs reduce-scattered; Megatron-LM's default "           \
    "--moe-token-dispatcher-type) or deepep (DeepEP's NVLink + RDMA kernels: one RDMA copy per "  \
    "destination node, forwarded over NVLink). docs/MOE.md.")                                      \
  X(parallel, moe_a2a_overlap, BOOL, parallel.moe_a2a_overlap, "", "false", 0, 0,                   \
    "Hide MoE dispatch/combine behind other compute (Megatron --overlap-moe-expert-parallel-comm, " \
    "1F1B A2A overlap): the compute stream does not wait for each all-to-all, only for all of a " \
    "pass's before the pass ends.")                                                               \
  X(parallel, moe_shared_expert_overlap, BOOL, parallel.moe_shared_expert_overlap, "", "false", 0, 0, \
    "Run the shared experts while the dispatch (forward) and the combine's grads (backward) are "  \
    "in flight (Megatron --moe-shared-expert-overlap); off, they run in turn with the routed "     \
    "experts.")                                                                                  \
  X(parallel, dp_bucket_elems, POSINT, parallel.dp_bucket_elems, "elements", "40000000", 1, 2147483647,         \
    "Gradient bucket size (Megatron-LM default: 40M elements).")                                 \
  X(cluster, gpu, GPU, cluster.gpu, "", "", 0, 0,                                          \
    "Hardware preset (docs/HARDWARE.md), or a GPU file (a path ending in .yaml, relative to the " \
    "YAML file; --set: to the working directory) in the format `stepcast hw show NAME --format " \
    "yaml` prints: edit a copy to describe another GPU. Required.")                                         \
  X(cluster, num_gpus, COUNT, cluster.num_gpus, "GPUs", "0", 1, 16777216,                       \
    "Total GPUs; 0 = nodes * gpus_per_node, or without nodes tp * pp * cp * dp when parallel.dp " \
    "is given. Giving only one of num_gpus and nodes in a file or --set re-derives the other.")                                            \
  X(cluster, nodes, COUNT, cluster.nodes, "nodes", "0", 1, 16777216, "Nodes; 0 = num_gpus / gpus_per_node.")  \
  X(cluster, gpus_per_node, COUNT, cluster.gpus_per_node, "GPUs", "0", 1, 1024,                           \
    "GPUs per node; 0 = the hardware preset's (a single node holds fewer "                       \
    "when num_gpus is smaller).")                                                                \
  X(cluster, nic_gbps, REAL, cluster.nic_gbps, "Gbit/s", "0", 0.1, 100000,                                    \
    "Scale-out bandwidth per GPU; 0 = the hardware preset's.")                                   \
  X(cluster, nvlink_gbps, REAL, cluster.nvlink_gbps, "GB/s", "0", 0.1, 100000,                                \
    "Intra-node bandwidth per GPU per direction; 0 = the hardware preset's.")                    \
  X(cluster, host_link_gbps, REAL, cluster.host_link_gbps, "GB/s", "0", 0.1, 10000,               \
    "GPU <-> host memory bandwidth per GPU per direction as copies reach it (pinned memory), "    \
    "for training.optimizer_offload and activation_offload_layers; 0 = the hardware preset's "   \
    "(PCIe Gen4 x16 ~25 GB/s, Gen5 ~50; NVLink-C2C 450 on a GH200). docs/HARDWARE.md.")           \
  X(cluster, host_mem_gbps, REAL, cluster.host_mem_gbps, "GB/s", "0", 0.1, 100000,                \
    "Host DRAM bandwidth one GPU's CPU optimizer step streams through (the host's memory "        \
    "bandwidth over its GPUs), for the CPU Adam of training.optimizer_offload_cpu_step; 0 = the " \
    "hardware preset's. docs/HARDWARE.md.")                                                      \
  X(cluster, mem_headroom, REAL, cluster.mem_headroom, "GiB or fraction", "0", 0, 1e6,           \
    "Memory kept free on every GPU: GiB when >= 1, else a fraction of the GPU's capacity "       \
    "(0.05 = 5 %). run's OOM verdict and sweep's memory filter use the capacity minus it.")      \
  X(cluster, price_per_gpu_hour, REAL, cluster.price_per_gpu_hour, "per GPU-hour", "0", 0, 1e6,  \
    "Price of one GPU for one hour, in any currency; with training.tokens the result gives "     \
    "cost = gpu_hours * price. 0 = not given.")                                                  \
  X(cluster, leaf_gpus, COUNT, cluster.leaf_gpus, "GPUs", "0", 1, 16777216,                      \
    "GPUs whose NICs meet below the spine: one leaf switch (top of rack), or with "               \
    "cluster.rail_optimized one scalable unit (a leaf per rail). A multiple of gpus_per_node; "   \
    "0 = all GPUs under one leaf (a flat non-blocking fabric, no spine). docs/COMM.md, "          \
    "section Network tiers.")                                                                    \
  X(cluster, spine_oversubscription, REAL, cluster.spine_oversubscription, "ratio", "1", 1, 64,  \
    "Leaf downlink to uplink bandwidth ratio (2 = 2:1): traffic crossing the spine gets the NIC " \
    "bandwidth over this when every GPU of a leaf sends across it at once; 1 (or 0) = "           \
    "non-blocking.")                                                                             \
  X(cluster, leaf_latency_us, REAL, cluster.leaf_latency_us, "us", "0", 0, 100,                  \
    "Extra latency of every network step (through a leaf switch) beyond the NCCL model's "       \
    "calibrated one; 0 = none.")                                                                 \
  X(cluster, spine_latency_us, REAL, cluster.spine_latency_us, "us", "0", 0, 100,                \
    "Extra latency of a network step that crosses the spine (leaf, spine, leaf) on top of "      \
    "leaf_latency_us; 0 = none.")                                                                \
  X(cluster, rail_optimized, BOOL, cluster.rail_optimized, "", "true", 0, 0,                     \
    "With cluster.leaf_gpus: GPU k of every node of a leaf group sits on rail leaf k, so an "     \
    "all-to-all's bytes for another local GPU index are first forwarded over NVLink to the GPU " \
    "on the destination's rail (NCCL's PXN); false: each node's NICs share one leaf. No effect " \
    "without leaf_gpus.")                                                                        \
  X(simulation, fold, BOOL, simulation.fold, "", "true", 0, 0,                                         \
    "Simulate one rank per symmetry class instead of every rank.")                               \
  X(simulation, interference, INTERFERENCE, simulation.interference, "", "none", 0, 0,                 \
    "How communication running on a GPU slows its compute kernels: none; constant (one "          \
    "slowdown per kernel class, calibration.interference_*); learned (a regression on "           \
    "kernel and communication features, calibration keys interference_w_*, fitted by "           \
    "`stepcast calibrate --interference`); tree (gradient-boosted trees on the same features, "   \
    "the XGBoost model file calibration.interference_tree, from `calibrate --interference "       \
    "--model tree`). docs/INTERFERENCE.md.")                                                      \
  X(simulation, share_links, BOOL, simulation.share_links, "", "true", 0, 0,                           \
    "Concurrent network transfers share the NIC bandwidth.")                                     \
  X(variation, slow_gpus, VARY, variation.slow_gpus, "", "", 0, 0,                                \
    "GPUs that compute slower: items `ranks=0,17,100-107 speed=0.8` (global ranks) or `count=4 " \
    "speed=0.9` (that many ranks drawn with variation.seed), separated by `;`; in YAML also a "   \
    "list of mappings (`- {ranks: [0, 17], speed: 0.8}`). speed multiplies the rank's compute "   \
    "rate: 0.8 makes its kernels take 1/0.8 as long. docs/WHATIF.md.")                            \
  X(variation, gpu_speed_sigma, REAL, variation.gpu_speed_sigma, "", "0", 0, 0.5,                 \
    "Per-GPU variability: every GPU's compute speed is exp(sigma * z), z standard normal drawn "  \
    "with variation.seed (reproducible); 0 = none. Every rank then differs, so the run is "       \
    "unfolded.")                                                                                 \
  X(variation, seed, COUNT, variation.seed, "", "0", 0, 2147483647,                              \
    "Seed of the random choices (count=, gpu_speed_sigma).")                                     \
  X(variation, slow_links, VARY, variation.slow_links, "", "", 0, 0,                              \
    "Degraded links: items `nodes=3,7 nic_speed=0.5 nvlink_speed=0.8` or `count=2 "              \
    "nic_speed=0.25`. A collective or transfer across nodes runs at the slowest NIC factor of "   \
    "its members, one inside a node at the slowest NVLink factor.")                              \
  X(variation, gpu_mix, VARY, variation.gpu_mix, "", "", 0, 0,                                    \
    "A heterogeneous cluster: `gpu=PRESET nodes=0-3` (node indices) or `gpu=PRESET count=N` "     \
    "(the last N nodes, i.e. the last pipeline stages in Megatron's rank order) run another GPU "  \
    "preset; their kernels are re-priced by class (docs/WHATIF.md) and their memory is checked "  \
    "against that GPU's capacity.")                                                              \
  X(variation, failures, VARY, variation.failures, "", "", 0, 0,                                  \
    "Steps at which a GPU is lost (`1200,3000`), each costing the work since the last "          \
    "checkpoint, training.restart_s and training.checkpoint_load_s; the result gives the "        \
    "goodput over the run.")                                                                     \
  X(variation, gpu_mtbf_hours, REAL, variation.gpu_mtbf_hours, "h", "0", 1, 1e9,                  \
    "Mean time between failures of one GPU; with it the run expects world * run time / MTBF "     \
    "failures, each losing half a checkpoint interval on average plus the restart. 0 = none.")   \
  X(variation, steps, COUNT, variation.steps, "steps", "0", 1, 1e12,                              \
    "Steps of the run that failures are counted over; 0 = training.tokens / tokens per step.")

/* Field indices: SC_FIELD_parallel_tp is the index of parallel.tp in
 * sc_config.field_line and in the table. */
enum {
#define SC_X_FIELD(sec, key, type, member, unit, def, lo, hi, doc) SC_FIELD_##sec##_##key,
  SC_CONFIG_FIELDS(SC_X_FIELD)
#undef SC_X_FIELD
      SC_FIELD_COUNT
};

/* field_line value of a field given by an override (sc_config_set) rather
 * than a file line; messages then say "--set" instead of "file:line". */
#define SC_CONFIG_LINE_SET SC_LINE_SET

/* Integer fields are limited to this so that the product of any two fits in
 * int64 (derived quantities such as global_batch * seq_len stay exact). */
#define SC_CONFIG_INT_MAX INT64_C(2147483647)

/* Recompute modules (training.recompute_modules), as bits. */
enum {
  SC_RC_CORE_ATTN = 1,
  SC_RC_LAYERNORM = 2,
  SC_RC_MOE_ACT = 4,
  SC_RC_MOE = 8,
  SC_RC_MLA_UP_PROJ = 16
};
/* Parses a recompute_modules list into *mask; 0, or SC_EINVAL with the
 * offending name copied into bad (n bytes). */
int sc__recompute_modules_parse(const char *list, unsigned *mask, char *bad, size_t n);
/* The modules of a config's recompute_modules (what recompute selective
 * re-runs; core_attn when the list does not parse). */
unsigned sc__recompute_modules(const sc_config *cfg);

/* Bytes per element of GEMM operands and activations for a precision: 4 for
 * fp32, else 2 (fp8 training keeps 16-bit activations between kernels). */
double sc__precision_elem_bytes(sc_precision p);

/* The GPU of cluster.gpu (the preset it names); NULL when unknown. The one
 * place that maps a config to its hardware. */
/* The GPU of a config: its preset, or its GPU file described in *own (whose
 * strings point into cfg). NULL when cluster.gpu names neither. */
const sc_hw *sc__config_gpu(const sc_config *cfg, sc_hw *own);

/* Where a field's value came from, for messages: "gpt.yaml:12" (file line),
 * "--set" (override), or cfg->origin when it is a default. Writes into buf
 * (always terminated) and returns buf. */
const char *sc__config_where(const sc_config *cfg, int field, char *buf, size_t n);
/* The field's current value as YAML scalar text ("8", "bf16", "true",
 * "\"a100-80gb\""): round-trips through the loader. Returns 0 or SC_EINVAL. */
int sc__config_format_field(const sc_config *cfg, int field, char *buf, size_t n);

#endif /* SC_CONFIG_INT_H */
