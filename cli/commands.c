/*
 * commands.c: the usage table, the one place each command's name, synopsis,
 * options (with one-line descriptions) and description are written. main.c
 * dispatches from it, sc_cli_next parses each command's options against it,
 * --help / `stepcast help` print it and `stepcast man` turns it into
 * stepcast(1) (cli/usage.c).
 */
#include "commands.h"

#include "stepcast/trace.h"

#include <string.h>

#define SET_OPT                                                                            \
  {"--set", "SECTION.KEY=VALUE", "override one config field (docs/CONFIG.md); repeatable, " \
                                 "applied in order",                                       \
   0}

/* The trace options of run and replay (cli/traceopt.c parses them). */
#define TRACE_OPT                                                                              \
  {"--trace", "FILE", "write the step's timeline (ui.perfetto.dev): Perfetto protobuf if FILE " \
                      "ends in .pftrace, else Chrome JSON",                                    \
   0}
#define TRACE_MORE_OPTS                                                                        \
  {"--trace-limit", "SIZE", "refuse a trace estimated above SIZE (K, M, G suffixes; default 4G)", \
   0},                                                                                         \
      {"--trace-format", "auto|json|perfetto",                                                 \
       "the trace's format (default auto: by --trace FILE's extension)", SC_CLI_CHOICE},       \
      {"--trace-ranks", "LIST",                                                                \
       "only these ranks in the trace: ranks and ranges, 0,7,1000-1015 (folded run: each "     \
       "rank's class; replay: ranges holding traced ranks)",                                   \
       0}

static const sc_cli_opt run_opts[] = {
    {"--hf", "FILE", "model shape from a HuggingFace config.json (as model.hf_config, after "
                     "CONFIG, before --set)", 0},
    SET_OPT,
    {"--calibration", "FILE", "load FILE's `calibration:` mapping (before any --set)", 0},
    {"--format", "text|json|csv", "output format (default text)", SC_CLI_CHOICE},
    TRACE_OPT,
    {"-o", "DIR", "write DIR/result.json, DIR/config.yaml and, unless --trace, DIR/trace.json "
                  "(trace.pftrace with --trace-format perfetto)",
     0},
    {"--html", "FILE", "write the HTML report (timeline, breakdown, memory; docs/REPORT.md)", 0},
    {"--print-config", NULL, "print the config instead of simulating: the built-in example's "
                             "file, or the resolved CONFIG / --hf / --set (every value)", 0},
    TRACE_MORE_OPTS,
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt sweep_opts[] = {
    {"--gpus", "N", "number of GPUs (default: the config's cluster.num_gpus)", 0},
    {"--top", "K", "print the K best layouts (default 10)", 0},
    {"--out", "FILE", "append one CSV row per simulated layout (crash-safe)", 0},
    {"--resume", NULL, "continue the --out FILE of an interrupted sweep", 0},
    {"--exhaustive", NULL, "simulate every layout that fits (default: skip those a step-time "
                           "bound shows cannot reach the top K; same top K)", 0},
    {"--format", "text|json", "output format of the ranking (default text)", SC_CLI_CHOICE},
    SET_OPT,
    {"--tp", "LIST", "tensor-parallel sizes to try, comma-separated (--tp 4,8)", 0},
    {"--pp", "LIST", "pipeline-parallel sizes to try", 0},
    {"--vpp", "LIST", "virtual pipeline stages (interleaving) to try", 0},
    {"--mb", "LIST", "micro-batch sizes to try", 0},
    {"--sp", "LIST", "sequence parallelism: on, off, 1, 0", 0},
    {"--recompute", "LIST", "recompute modes: none, selective, full", 0},
    {"--dist-opt", "LIST", "distributed optimizer: on, off, 1, 0", 0},
    {"--emit", "megatron", "after the ranking, the Megatron-LM launch line of each top layout "
                           "(text output)", SC_CLI_CHOICE},
    {"--cp", "LIST", "context-parallel sizes to try", 0},
    {"--schedule", "LIST",
     "pipeline schedules: 1f1b, gpipe, interleaved, zb-h1, zbv, dualpipe, dualpipev", 0},
    {"--fsdp", "LIST", "ZeRO-3 / FSDP: off, full, or shard sizes (hybrid sharding)", 0},
    {"--pp-split", "LIST", "layer split: plain, counted (embedding and loss as layers)", 0},
    {"--ep", "LIST", "expert-parallel sizes to try (MoE models; default: the divisors of "
                     "the experts that fit the grid)", 0},
    {"--etp", "LIST", "expert tensor-parallel sizes to try (MoE; default 1 and tp)", 0},
    {"--dispatcher", "LIST", "MoE token dispatchers: alltoall, allgather, deepep (default: the "
                             "config's)", 0},
    {"--no-progress", NULL, "no progress bar (drawn on stderr when it is a terminal)", 0},
    {"--stop-after", "N", "stop as if killed after N new rows (a testing aid)", 0},
    {"--html", "FILE", "write the HTML report (step time vs memory, Pareto front, top K)", 0},
    {"--robust-seeds", "N", "re-simulate the best layouts under the config's variation (e.g. "
                            "--set variation.gpu_speed_sigma=0.03) with N seeds; rank them by P50 "
                            "and P99 step time (docs/WHATIF.md)", 0},
    {"--robust-top", "K", "how many of the best layouts --robust-seeds takes (default 5)", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt validate_opts[] = {
    {"--calibration", "FILE", "cost-model parameters from FILE's `calibration:` mapping", 0},
    SET_OPT,
    {"--format", "text|json|csv|markdown", "output format (default text)", SC_CLI_CHOICE},
    {"-o", "FILE", "write the report to FILE instead of stdout", 0},
    {"--html", "FILE", "also write the HTML report (predicted vs measured, errors)", 0},
    {"--fit-interval", "FILE", "write the 90 % prediction-interval widths fitted on the "
                               "calibration rows' errors (a calibration file)", 0},
    {"--held-out", "FILE", "with --fit-interval: the calibration rows' held-out "
                           "predictions (validation/calibration/loo.csv, written by "
                           "tools/interval_loo.sh)", 0},
    {"--by", "file|gpu|parallelism",
     "group the summary by case file (default), GPU preset or parallelism mix (FSDP+TP, "
     "DP+TP+PP+EP, ...)",
     SC_CLI_CHOICE},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt cal_cases_opts[] = {
    {"--cases", "CASES.csv", "case file whose split=calibration rows are fitted; repeatable",
     0},
    {"-o", "FILE", "write the calibration YAML to FILE instead of stdout", 0},
    {"--gpu", "NAME",
     "fit the rows of this GPU preset and of the presets with its defaults (default: the rows "
     "must share one set)",
     0},
    {"--params", "P1,P2,...",
     "parameters to fit, of gemm_eff, gemm_dim_half, attn_eff, cudnn_attn_eff, mem_eff, "
     "scores_mem_eff, kernel_overhead_us (default: all but the attention kernels no row "
     "runs)",
     0},
    SET_OPT,
    {"--prior-weight", "W", "weight of the pull towards the defaults, >= 0 (default 1)", 0},
    {"--max-evals", "N", "objective evaluations of the fit, 1..100000 (default 600)", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt cal_nccl_opts[] = {
    {"--nccl-tests", "FILE...", "the nccl-tests outputs to fit (any *_perf binary)", SC_CLI_LIST},
    {"-o", "FILE", "write the calibration YAML to FILE (the report then goes to stdout)", 0},
    {"--gpu", "NAME", "GPU preset (default: guessed from the device names)", 0},
    {"--gpus-per-node", "N", "GPUs per node, for outputs without device lines", 0},
    {"--nic-gbps", "GBIT", "NIC bandwidth per GPU, Gb/s (default: the preset's)", 0},
    {"--nvlink-gbps", "GB", "NVLink bandwidth per direction, GB/s (default: the preset's)", 0},
    {"--sharp", NULL, "the network has in-switch reduction (CollNet/SHARP)", 0},
    {"--op", "OP", "collective of files whose output and name do not tell it", 0},
    {"--params", "K1,K2,...", "fit only these nccl_* keys; the others keep the GPU's defaults "
                              "(default: every fitted key)",
     0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt cal_interf_opts[] = {
    {"--interference", "TRACE...", "Kineto traces (JSON, .gz or .zst) or Echo-slowdown CSV tables "
                                   "to learn from",
     SC_CLI_LIST},
    {"-o", "FILE", "write the calibration YAML to FILE (the report then goes to stdout)", 0},
    {"--min-kernel-us", "US", "shortest median duration alone of a kernel used (default 10)", 0},
    {"--min-alone", "N", "runs without overlap a kernel needs (default 3)", 0},
    {"--max-spread", "F", "largest (q3 - q1) / median of those runs (default 0.25)", 0},
    {"--min-overlap", "F", "least fraction of a run's work done overlapped (default 0.2)", 0},
    {"--shape-tol", "F", "drop overlapped runs faster than (1 - F) x the fastest alone", 0},
    {"--ridge", "L", "pull of each class intercept towards the pooled one", 0},
    {"--huber", "F", "scale of the robust loss, relative error", 0},
    {"--folds", "K", "held-out split over kernels: K folds by name hash; -1: none", 0},
    {"--model", "M", "linear (default: interference_w_* keys) or tree (also writes the XGBoost "
                     "booster FILE.xgb.json beside -o FILE, named by interference_tree)",
     0},
    {"--tree-rounds", "N", "boosted trees (default 60)", 0},
    {"--tree-depth", "N", "largest depth of a tree (default 3)", 0},
    {"--tree-eta", "F", "learning rate of the boosting (default 0.1)", 0},
    {"--tree-min-child", "W", "least summed pair weight in a leaf (default 5)", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt cal_kernels_opts[] = {
    {"--kernels", "TRACE...", "Kineto traces of steps that ran on a GPU (record_shapes; JSON, .gz or .zst)",
     SC_CLI_LIST},
    {"-o", "FILE", "write the calibration YAML to FILE (the report then goes to stdout)", 0},
    {"--cluster", "FILE", "the cluster and calibration sections of a config file to start from", 0},
    {"--set", "SECTION.KEY=VALUE", "override one config field (training.precision=bf16 for a bf16 trace); "
                                   "repeatable",
     0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt comm_opts[] = {
    {"--gpu", "NAME", "GPU preset (`stepcast hw list`)", 0},
    {"--gpus", "N", "GPUs in the collective's group", 0},
    {"--gpus-per-node", "N", "GPUs per node (default: the preset's)", 0},
    {"--op", "OP", "all_reduce (default), all_gather, reduce_scatter, all_to_all, broadcast, "
                   "send_recv",
     0},
    {"--nic-gbps", "GBIT", "NIC bandwidth per GPU, Gb/s (default: the preset's)", 0},
    {"--nvlink-gbps", "GB", "NVLink bandwidth per direction, GB/s (default: the preset's)", 0},
    {"--sharp", NULL, "the network has in-switch reduction (CollNet/SHARP)", 0},
    {"--leaf-gpus", "N", "GPUs under one leaf switch (rail leaves); the group fills leaves in "
                         "order (default: one leaf)",
     0},
    {"--spine-oversubscription", "R", "leaf downlink : uplink bandwidth, 1 to 64 (default 1)",
     0},
    {"--leaf-latency-us", "US", "extra latency per network step (default 0)", 0},
    {"--spine-latency-us", "US", "extra latency per step across the spine (default 0)", 0},
    {"--calibration", "FILE", "collective-model parameters from FILE (calibrate --nccl-tests)",
     0},
    {"--min-bytes", "SIZE", "smallest message, bytes; K, M, G suffixes (default 8)", 0},
    {"--max-bytes", "SIZE", "largest message (default 8G)", 0},
    {"--step-factor", "F", "ratio of successive sizes, above 1 (default 2)", 0},
    {"--compare", "FILE", "predicted vs measured for every row of an nccl-tests output", 0},
    {"--format", "text|json", "output format (default text)", SC_CLI_CHOICE},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt import_opts[] = {
    {"-o", "JOB.scw", "the job file to write (required)", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt import_cpu_opts[] = {
    {"-o", "JOB.scw", "the job file to write (required)", 0},
    {"--gpu-trace", NULL,
     "the traces ran on a GPU (Kineto with record_shapes): price their operators as a CPU trace's, "
     "ignore their kernels, keep the measured step to compare",
     0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt hw_show_opts[] = {
    {"--format", "text|yaml", "text (default) or a GPU file", SC_CLI_CHOICE},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt import_megatron_opts[] = {
    {"-o", "JOB.yaml", "write the config keys to JOB.yaml (default stdout)", 0},
    {"--verbose", NULL, "list the flags that were not timing-relevant", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt export_megatron_opts[] = {SET_OPT, {NULL, NULL, NULL, 0}};

static const sc_cli_opt replay_opts[] = {
    {"--scale", "tp=N,cp=C,pp=M,dp=K,fsdp=K,ep=E",
     "re-target: dp alone to K data-parallel replicas (weak scaling); tp / cp / pp split an ex-situ "
     "job with module paths over tensor-parallel ranks, context-parallel ranks (the sequence, ring "
     "attention) and pipeline stages; fsdp=K shards its parameters over K of the replicas (FSDP per "
     "layer instead of DDP; K below dp: HSDP); ep=E spreads its MoE layers' experts over E of the "
     "replicas (all-to-all dispatch and combine)",
     0},
    {"--micro-batches", "N", "micro-batches of the pipeline schedule with --scale pp (default pp)", 0},
    {"--fsdp-keep", NULL,
     "with fsdp=K: each unit's parameters gathered once per step and kept unsharded (FSDP2 with "
     "reshard_after_forward=False under torch pipelining, as torchtitan's PP runs)", 0},
    {"--layers", "N",
     "extrapolate an ex-situ job with module paths to N layers (the last traced layer repeated), "
     "before any --scale", 0},
    {"--cp-comm", "p2p|a2a|allgather",
     "the CP exchange of --scale cp=C: the ring of K/V chunks (p2p, default), Ulysses all-to-alls over "
     "heads (a2a) or K/V all-gathered, dK/dV reduce-scattered (allgather)", SC_CLI_CHOICE},
    {"--schedule", "1f1b|gpipe|interleaved|zb-h1|zbv",
     "pipeline schedule of a --scale pp re-target (default 1f1b; zb-h1 splits the backward into "
     "input- and weight-gradient passes; zbv also runs two model chunks per stage in a V)", SC_CLI_CHOICE},
    {"--vpp", "N", "model chunks per stage of the interleaved schedule (default 2; zbv runs 2)", 0},
    {"--sequence-parallel", NULL,
     "with --scale tp=N (N >= 2): Megatron's sequence parallelism (norms and residuals on s/tp tokens, "
     "all-gathers and reduce-scatters instead of all-reduces)", 0},
    {"--async-tp", NULL,
     "with --sequence-parallel: async TP (torchtitan's micro-pipelined all-gather matmul and matmul "
     "reduce-scatter: the GEMM beside each SP collective runs in tp row chunks that overlap it)", 0},
    {"--compile", NULL,
     "price an ex-situ job as torch.compile runs its blocks: a layer's memory-bound kernels between two "
     "other kernels fused into one", 0},
    {"--shard-rules", "FILE", "sharding overrides: lines `MODULE-GLOB column-parallel|row-parallel|"
                              "replicated|vocab-parallel`", 0},
    {"--replica", "R", "ranks per data-parallel replica of the traced job (default 1)", 0},
    {"--comm", "auto|measured|model",
     "collective times: traced, or priced by the comm model (auto: measured unless re-targeted)",
     SC_CLI_CHOICE},
    {"--cluster", "FILE", "the cluster, calibration and simulation sections of a config file", 0},
    SET_OPT,
    {"--ddp", NULL, "add PyTorch DDP at the traced scale too (ex-situ jobs)", 0},
    {"--bucket-mb", "MiB", "DDP gradient bucket size (default 25)", 0},
    {"--first-bucket-mb", "MiB", "size of DDP's first bucket (default 1)", 0},
    {"--format", "text|json", "output format (default text)", SC_CLI_CHOICE},
    TRACE_OPT,
    {"--html", "FILE", "write the HTML report (timeline of the replay, time per category)", 0},
    TRACE_MORE_OPTS,
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt report_opts[] = {
    {"-o", "REPORT.html", "the HTML report to write (required)", 0},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt diff_opts[] = {
    {"--format", "text|json", "output format (default text)", SC_CLI_CHOICE},
    {NULL, NULL, NULL, 0}};

static const sc_cli_opt man_opts[] = {
    {"-o", "FILE", "write the page to FILE instead of stdout", 0},
    {NULL, NULL, NULL, 0}};

static const char run_text[] =
    "Simulates one training step of CONFIG (YAML: model, training, parallel,\n"
    "cluster, simulation, calibration; docs/CONFIG.md) and prints step time,\n"
    "tokens/s, TFLOP/s per GPU, MFU, memory per GPU and where the step goes.\n"
    "A config names its model (a preset, a config.json or the shape) and GPU;\n"
    "the rest takes documented neutral defaults, listed under the header with\n"
    "what was derived. Without CONFIG (and --hf), simulates the built-in example:\n"
    "GPT-3 175B on 1,024 A100-80GB (TP8 PP16 DP8, batch 1536, full recompute;\n"
    "Megatron SC21), which --print-config prints and --set edits.\n"
    "--set and --calibration apply after CONFIG, --calibration first.";

static const char sweep_text[] =
    "Enumerates parallel layouts of CONFIG on N GPUs (default: the config's),\n"
    "prunes those that do not divide or do not fit memory, simulates the rest and\n"
    "prints the top K (default 10) by throughput. LIST restricts one dimension:\n"
    "comma-separated values (`--tp 4,8`, `--recompute selective,full`, `--sp 1`).\n"
    "--out appends one CSV row per simulated config (crash-safe); --resume\n"
    "continues such a file. Under `mpirun -np K` the work is shared by K processes\n"
    "(builds with SC_MPI) and the output is the same as with one. With nothing\n"
    "to rank it says why (the reasons counted) and exits 2. docs/SWEEP.md.";

static const char validate_text[] =
    "Simulates every case of the case files (validation/SCHEMA.md) and prints\n"
    "measured vs predicted step time, signed error, and MAPE / median / worst error\n"
    "per file and split; the headline figures cover validation rows. A sibling\n"
    "CASES.yaml, if present, is the base config of the file's rows.";

static const char calibrate_text[] =
    "Fits model parameters to measurements and writes a `calibration:` mapping\n"
    "for --calibration or a config's `calibration:` (a path or a mapping): the\n"
    "compute model to published step times (--cases), the collective model to\n"
    "nccl-tests outputs (--nccl-tests), the learned interference model to\n"
    "profiler traces (--interference).";

static const char cal_cases_text[] =
    "Fits compute-model parameters (default: gemm_eff, gemm_dim_half, mem_eff,\n"
    "kernel_overhead_us and the efficiency of each attention kernel the rows run:\n"
    "attn_eff for flash, cudnn_attn_eff for cudnn) on the split=calibration rows\n"
    "only and writes a `calibration:` YAML for --calibration / `calibration:`.\n"
    "docs/VALIDATION.md.";

static const char cal_nccl_text[] =
    "Fits the collective model's parameters (docs/COMM.md) to nccl-tests outputs\n"
    "(any *_perf binary; ranks and nodes from their device lines), prints the fit's\n"
    "error per file and writes a `calibration:` mapping of nccl_* keys. The GPU is\n"
    "guessed from the device names unless given; --op names the collective of\n"
    "files whose output and name do not.";

static const char cal_kernels_text[] =
    "Imports GPU traces as `import cpu --gpu-trace` does and fits the compute\n"
    "model's efficiencies to their own kernels: each priced operator against the\n"
    "kernel time the trace measured for it, per class (gemm_eff for GEMMs and\n"
    "convolutions, mem_eff for streaming memory-bound kernels, attn_eff and\n"
    "cudnn_attn_eff for fused attention), each to where the class's priced total\n"
    "equals its measured total (per-operator errors reported).\n"
    "The GPU is the traces' unless --set cluster.gpu; the precision fp32 unless\n"
    "--set training.precision. Reports each class before and after and writes the\n"
    "`calibration:` mapping to -o (else stdout): replay other traces ex-situ with\n"
    "`--cluster FILE`. docs/TRACE.md.";

static const char cal_interf_text[] =
    "Pairs every compute kernel of Kineto traces overlapped by an NCCL kernel with\n"
    "the same kernel (name, grid, block) alone, fits the learned interference model\n"
    "(simulation.interference: learned) and reports its error on held-out kernels\n"
    "(default: each kernel predicted by the fit on the others, 10 folds beyond 200\n"
    "kernels; --folds K: K folds by name hash; -1: none) and held-out traces.\n"
    "Also fits the tree model (XGBoost, simulation.interference: tree) and the\n"
    "constant table on the same pairs and reports them on the same splits.\n"
    "A .csv input is a table of paired measurements in the Echo-slowdown layout\n"
    "(validation/interference/echo-slowdown/ORIGIN.md), one data set of its own.\n"
    "Writes the `calibration:` mapping (interference_* and interference_w_* keys;\n"
    "with --model tree, interference_tree and the booster file) to -o (else\n"
    "stdout). docs/INTERFERENCE.md.";

static const char comm_text[] =
    "Predicts collective times with the \"nccl\" model (docs/COMM.md) in the\n"
    "nccl-tests layout. --compare prints predicted vs measured for every row of\n"
    "an nccl-tests output (GPU, ranks and placement from its device lines unless\n"
    "given); measured = the smaller of out-of-place and in-place; a run driving\n"
    "G GPUs from one thread (nGpus G) is predicted no faster than G kernel\n"
    "launches. A run whose first size took over twice the time of the next has a\n"
    "warm-up row: shown, not counted in the MAPE.";

#define IMPORT_TEXT                                                                 \
  "Reads profiler traces, one per rank, into a job of per-rank programs of\n"        \
  "measured operations, their dependencies and communication groups, and saves\n"    \
  "it as a .scw file for `stepcast replay` (docs/TRACE.md, docs/SCW.md)."

static const char import_text[] = IMPORT_TEXT;
static const char import_kineto_text[] =
    "Kineto: PyTorch profiler JSON traces (plain, .gz or .zst), one per rank.\n" IMPORT_TEXT;
static const char import_chakra_text[] =
    "Chakra: Chakra ET protobuf (*.<rank>.et) or PyTorch host execution-trace JSON.\n" IMPORT_TEXT;
static const char import_cpu_text[] =
    "cpu: a step profiled on a CPU with input shapes (tools/trace_torch.py): every\n"
    "operator is priced on the target GPU at replay (ex-situ, `replay --ddp`).\n"
    "--gpu-trace takes a trace that ran on a GPU instead: its operators are priced\n"
    "the same way, its host timeline and measured step are kept, and its GPU\n"
    "(deviceProperties) is the replay's default, where the replay compares the cost\n"
    "model with the measurement; on another GPU it predicts (docs/TRACE.md).\n" IMPORT_TEXT;

static const char import_megatron_text[] =
    "Reads a Megatron-LM launch line (the flags of pretrain_gpt.py, behind torchrun\n"
    "or in a script with backslash continuations) and writes the config keys it\n"
    "sets as YAML: model shape, parallel layout, batch sizes, precision, recompute,\n"
    "overlap flags, uneven stages, CP and MoE; Megatron-LM's defaults that differ\n"
    "from stepcast's are written out. Flags that do not change a step's time are\n"
    "counted (--verbose lists them). The GPU is not in a launch line: add a cluster\n"
    "section (torchrun's --nnodes / --nproc-per-node give the GPU count).\n"
    "docs/MEGATRON.md.";

static const char export_text[] = "Writes a config in another tool's terms.";

static const char export_megatron_text[] =
    "Prints the Megatron-LM launch line (torchrun and pretrain_gpt.py flags) of\n"
    "CONFIG (default: the built-in example) after --set: `import megatron` of it\n"
    "gives back a config that simulates identically. Layouts Megatron-LM has no\n"
    "flag for (ZeRO-2, zero-bubble schedules, GPipe) are refused. docs/MEGATRON.md.";

static const char replay_text[] =
    "Replays an imported job through the engine and reports the predicted time\n"
    "per iteration next to the traced one; --scale dp=N re-targets it to another\n"
    "data-parallel degree first. The GPU is the trace's unless --set cluster.gpu.\n"
    "An ex-situ job (import cpu) is priced on cluster.gpu in fp32 unless\n"
    "training.precision is set; --scale dp=N then adds PyTorch DDP (buckets of\n"
    "--bucket-mb, default 25, the first --first-bucket-mb, default 1); --ddp adds it\n"
    "at the traced scale too (DDP with one process still copies into buckets).\n"
    "--scale tp=N,cp=C,pp=M,dp=K re-targets an ex-situ job whose trace has module\n"
    "paths (tools/trace_torch.py): Megatron tensor parallelism of the traced modules\n"
    "by the sharding rules (--shard-rules overrides them; --sequence-parallel adds\n"
    "Megatron's sequence parallelism), the sequence split over C\n"
    "ranks with ring attention, the layers cut into M stages run\n"
    "along --schedule (1F1B, GPipe, interleaved with --vpp chunks, ZB-H1, ZB-V) over\n"
    "--micro-batches, DDP over each stage's K replicas (fsdp=K: FSDP per layer).\n"
    "--layers N runs such a job with N layers, traced with fewer: the last traced\n"
    "layer's operators are repeated (forward, backward, gradients, optimizer).\n"
    "A job with measured kernel times replayed for another GPU than its trace's is\n"
    "refused.\n"
    "docs/TRACE.md.";

const sc_cli_cmd sc_cli_commands[] = {
    {"run", "[CONFIG.yaml] [OPTIONS]", "simulate one training step of a config", run_text,
     run_opts, sc_cli_run, 0, 0},
    {"report", "DIR -o REPORT.html", "the HTML report of a run saved with run -o DIR",
     "Simulates DIR/config.yaml (written by `run -o DIR`) again and writes its HTML\n"
     "report, as `run --html` does; warns when DIR/result.json holds another step\n"
     "time (a different build or calibration). docs/REPORT.md.",
     report_opts, sc_cli_report, 0, 0},
    {"diff", "A.json B.json [--format text|json]", "what changed between two results",
     "Reads two results saved by `run --format json` or `run -o DIR` (result.json)\n"
     "and prints step time, tokens/s, TFLOP/s, MFU, memory, time to train and cost\n"
     "and every breakdown category of both, with B - A and the relative change.",
     diff_opts, sc_cli_diff, 0, 0},
    {"sweep", "[CONFIG.yaml] [--gpus N] [OPTIONS]",
     "search parallel layouts of a config by throughput", sweep_text, sweep_opts,
     sc_cli_sweep, 0, 0},
    {"validate", "CASES.csv... [OPTIONS]", "predicted vs published step times of case files",
     validate_text, validate_opts, sc_cli_validate, 0, 0},
    {"calibrate", NULL, "fit model parameters to measurements", calibrate_text, NULL, NULL, 0, 0},
    {"calibrate --cases", "CASES.csv [--cases CASES.csv ...] [OPTIONS]",
     "fit the compute model to published step times", cal_cases_text, cal_cases_opts,
     sc_cli_calibrate_cases, 0, 0},
    {"calibrate --nccl-tests", "FILE... [OPTIONS]",
     "fit the collective model to nccl-tests outputs", cal_nccl_text, cal_nccl_opts,
     sc_cli_calibrate_nccl, 0, 0},
    {"calibrate --kernels", "TRACE.json[.gz]... [OPTIONS]",
     "fit the compute model to a GPU trace's kernels", cal_kernels_text, cal_kernels_opts,
     sc_cli_calibrate_kernels, 0, 0},
    {"calibrate --interference", "TRACE.json[.gz]... [OPTIONS]",
     "fit the learned interference model to Kineto traces", cal_interf_text, cal_interf_opts,
     sc_cli_calibrate_interference, 0, 0},
    {"comm", "--gpu NAME --gpus N [OPTIONS]\n--compare NCCL_TESTS_OUTPUT [OPTIONS]",
     "predicted collective times, or vs nccl-tests output", comm_text, comm_opts,
     sc_cli_comm, 0, 0},
    {"import", NULL, "profiler traces to a .scw job", import_text, NULL, NULL, 0, 0},
    {"import kineto", "TRACE.json[.gz|.zst]... -o JOB.scw",
     "PyTorch profiler (Kineto) traces to a .scw job",
     import_kineto_text,
     import_opts, sc_cli_import, SC_TRACE_KINETO, 0},
    {"import chakra", "TRACE.et|TRACE.json... -o JOB.scw",
     "Chakra or PyTorch execution traces to a .scw job",
     import_chakra_text,
     import_opts, sc_cli_import, SC_TRACE_CHAKRA, 0},
    {"import cpu", "TRACE.json[.gz]... -o JOB.scw",
     "a step traced on a CPU to a .scw job (ex-situ)",
     import_cpu_text, import_cpu_opts, sc_cli_import, SC_TRACE_CPU, 0},
    {"import megatron", "ARGS.txt [-o JOB.yaml] [--verbose]",
     "a Megatron-LM launch line to config keys", import_megatron_text, import_megatron_opts,
     sc_cli_import_megatron, 0, 0},
    {"export", NULL, "configs in other tools' terms", export_text, NULL, NULL, 0, 0},
    {"export megatron", "[CONFIG.yaml] [--set KEY=VALUE ...]",
     "a config as a Megatron-LM launch line", export_megatron_text, export_megatron_opts,
     sc_cli_export_megatron, 0, 0},
    {"replay", "JOB.scw [OPTIONS]", "simulate a .scw job as traced or re-targeted", replay_text,
     replay_opts, sc_cli_replay, 0, 0},
    {"hw", NULL, "GPU presets",
     "GPU presets with datasheet figures and their sources (docs/HARDWARE.md);\n"
     "a preset's name is a value of cluster.gpu and of --gpu.",
     NULL, NULL, 0, 0},
    {"hw list", "", "list the GPU presets", NULL, NULL, sc_cli_hw_list, 0, 0},
    {"hw show", "NAME [--format text|yaml]", "show one GPU preset and its sources",
     "Prints a preset's figures and sources; --format yaml prints it as a GPU file\n"
     "(cluster.gpu: FILE.yaml takes a preset name or such a file): edit a copy to\n"
     "describe a GPU the presets do not have. docs/HARDWARE.md.",
     hw_show_opts, sc_cli_hw_show, 0, 0},
    {"presets", "", "list the model presets (model.preset)", NULL, NULL, sc_cli_presets, 0, 0},
    {"config-docs", "", "print the config reference (docs/CONFIG.md)",
     "Prints every config field, its unit and default as Markdown: the text of\n"
     "docs/CONFIG.md (`stepcast config-docs > docs/CONFIG.md`).",
     NULL, sc_cli_config_docs, 0, 0},
    {"version", "", "print the version", NULL, NULL, sc_cli_version, 0, 0},
    {"help", "[COMMAND [SUBCOMMAND]]", "print the usage of stepcast or of one command",
     "Prints the list of commands, or one command's usage and options, as\n"
     "`stepcast COMMAND --help` (or -h) does.",
     NULL, sc_cli_help, 0, 0},
    {"man", "[-o FILE]", "write the man page stepcast(1), troff -man",
     "Writes stepcast(1) from the usage table that --help prints.", man_opts, sc_cli_man_cmd, 0,
     1},
};

const size_t sc_cli_ncommands = sizeof sc_cli_commands / sizeof sc_cli_commands[0];

const sc_cli_cmd *sc_cli_find(const char *name) {
  for (size_t i = 0; i < sc_cli_ncommands; i++)
    if (!strcmp(sc_cli_commands[i].name, name)) return &sc_cli_commands[i];
  return NULL;
}

/* Whether row name is argv's first k words. */
static int names_words(const char *name, int k, char **argv) {
  const char *p = name;
  for (int w = 0; w < k; w++) {
    size_t len = strlen(argv[w]);
    if (strncmp(p, argv[w], len) || (p[len] != ' ' && p[len] != 0)) return 0;
    p += len;
    if (*p == ' ') p++;
    else if (w + 1 < k) return 0;
  }
  return *p == 0;
}

const sc_cli_cmd *sc_cli_lookup(int argc, char **argv, int *used) {
  const sc_cli_cmd *best = NULL;
  *used = 0;
  for (size_t i = 0; i < sc_cli_ncommands; i++)
    for (int k = argc < 2 ? argc : 2; k > *used; k--)
      if (argv[k - 1][0] != '-' && names_words(sc_cli_commands[i].name, k, argv)) {
        best = &sc_cli_commands[i];
        *used = k;
        break;
      }
  if (!best || best->run) return best;
  /* A group of modes: the member whose flag is among the arguments. */
  const sc_cli_cmd *mode = NULL;
  size_t glen = strlen(best->name);
  for (size_t i = 0; i < sc_cli_ncommands; i++) {
    const char *n = sc_cli_commands[i].name;
    if (strncmp(n, best->name, glen) || n[glen] != ' ' || n[glen + 1] != '-') continue;
    for (int j = *used; j < argc; j++)
      if (!strcmp(argv[j], n + glen + 1)) {
        if (mode && mode != &sc_cli_commands[i]) return best; /* two modes: the group */
        mode = &sc_cli_commands[i];
      }
  }
  return mode ? mode : best;
}
