/*
 * hw.c: the built-in GPU hardware presets (peak FLOP rates, HBM, NVLink, NIC)
 * that the cost models read through sc_hw_find. One X-macro table is the single
 * source; docs/HARDWARE.md mirrors it with the citations and explains how to
 * add a preset.
 */
#include "base/sc_int.h"

#include <ctype.h>

/*
 * X(key, description, fp32, tf32, bf16, fp8, hbm_gib, hbm_gbps, sms,
 *   nvlink_gbps, nic_gbps, gpus_per_node, source, host_link_gbps, host_mem_gbps)
 *
 * Conventions (see struct sc_hw in stepcast.h):
 * - FLOP rates are dense peaks in TFLOP/s. Datasheets print tensor-core rates
 *   "with sparsity"; the dense figure is half of that.
 * - hbm_gib holds the marketing "GB" figure unchanged (80 for an 80 GB part).
 *   The field is nominally GiB: these parts carry about that many GiB (an
 *   A100 80GB has exactly 80 GiB), so the figure is at most ~1% high.
 * - nvlink_gbps is per GPU per direction: half of the datasheet's
 *   bidirectional "NVLink bandwidth".
 * - nic_gbps is the scale-out NIC per GPU of the vendor's 8-GPU reference
 *   system (DGX), in Gbit/s.
 * - host_link_gbps (host memory offload, docs/MEMORY.md) is what a pinned
 *   copy reaches per direction, GB/s: about 80 % of a x16 link's raw rate
 *   (PCIe Gen3 15.75, Gen4 31.5, Gen5 63 GB/s per direction: 8/16/32 GT/s x
 *   16 lanes x 128b/130b), so 12, 25 and 50; on GB200 the NVLink-C2C of the
 *   superchip, 900 GB/s bidirectional shared by its two GPUs, 225 a GPU per
 *   direction. Each GPU is assumed to have its own x16 link to the host.
 * - host_mem_gbps is the reference host's DRAM peak divided by its GPUs
 *   (channels x transfer rate x 8 bytes): DGX-2 2 x 6 ch DDR4-2666 / 16 =
 *   16; DGX A100 2 x 8 ch DDR4-3200 / 8 = 51.2; DGX H100 and H200 2 x 8 ch
 *   DDR5-4800 / 8 = 76.8 (also taken for the H100 96 GB, H800 and H20
 *   hosts, whose CPUs their sources do not give); DGX B200 2 x 8 ch
 *   DDR5-5600 / 8 = 89.6; GB200 NVL72 18.4 TB/s of LPDDR5X / 72 = 255.6;
 *   MI300X / MI325X platforms 2 x 12 ch DDR5-4800 (EPYC 9004) / 8 = 115.2
 *   (an assumption: AMD's datasheets give no host). The CPU optimizer step
 *   of training.optimizer_offload is priced at it.
 */
#define SC_HW_LIST(X)                                                         \
  /* NVIDIA Tesla V100 datasheet (2020), SXM2 column. No TF32, BF16 or FP8:   \
   * bf16 holds the FP16 tensor-core peak (125), the nearest equivalent. NIC: \
   * DGX-2, one 100 Gb/s EDR InfiniBand port per GPU. NVLink 2.0: 300 GB/s    \
   * bidirectional per GPU. */                                                \
  X("v100-32gb", "NVIDIA Tesla V100 SXM2 32GB",                               \
    15.7, 0.0, 125.0, 0.0, 32.0, 900.0, 80, 150.0, 100.0, 8,                  \
    "NVIDIA Tesla V100 GPU datasheet (2020), V100 SXM2 column", 12.0, 16.0) \
  /* NVIDIA A100 datasheet, SXM 40GB column: 1,555 GB/s HBM2. NVLink 3.0:     \
   * 600 GB/s bidirectional. NIC: DGX A100, 200 Gb/s HDR InfiniBand per     \
   * GPU. */                                                                  \
  X("a100-40gb", "NVIDIA A100 SXM4 40GB",                                     \
    19.5, 156.0, 312.0, 0.0, 40.0, 1555.0, 108, 300.0, 200.0, 8,              \
    "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB SXM column", 25.0, 51.2) \
  /* NVIDIA A100 datasheet, SXM 80GB column: 2,039 GB/s HBM2e. Same compute,  \
   * NVLink and NIC as the 40GB part. */                                      \
  X("a100-80gb", "NVIDIA A100 SXM4 80GB",                                     \
    19.5, 156.0, 312.0, 0.0, 80.0, 2039.0, 108, 300.0, 200.0, 8,              \
    "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM column", 25.0, 51.2) \
  /* NVIDIA H100 datasheet, SXM column (3.35 TB/s, NVLink 900 GB/s bidir.).   \
   * Dense tensor peaks to one decimal from the H100 architecture whitepaper, \
   * SXM5 column. NIC: DGX H100, 400 Gb/s NDR InfiniBand per GPU. */          \
  X("h100-sxm", "NVIDIA H100 SXM5 80GB",                                      \
    67.0, 494.7, 989.4, 1978.9, 80.0, 3350.0, 132, 450.0, 400.0, 8,           \
    "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column; "         \
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), SXM5", 50.0, 76.8) \
  /* H100 SXM with 96 GB HBM2e at 2.4 TB/s and a 500 W power limit, as Meta's \
   * Grand Teton hosts run it (torchtitan's Llama 3 H100 benchmarks, 2024-12: \
   * "96 GB HBM2e ... default 500 W"; NVLink-connected, 400 Gb/s RDMA per      \
   * GPU). No datasheet gives its clocks; torchtitan says its peak is         \
   * "between SXM and NVL", so the tensor peaks are the midpoint of the H100  \
   * SXM (989.4 dense BF16) and the H100 NVL (835.5: 1,671 with sparsity),     \
   * 912.5, an estimate (docs/HARDWARE.md). FP32 scaled alike. */             \
  X("h100-96gb-500w", "NVIDIA H100 SXM 96GB HBM2e, 500 W (Grand Teton)",      \
    61.8, 456.2, 912.5, 1824.9, 96.0, 2400.0, 132, 450.0, 400.0, 8,           \
    "torchtitan benchmarks/llama3_h100_202412_torchtitan.md (hardware); "     \
    "peaks: midpoint of the H100 SXM and H100 NVL datasheets (estimate)", 50.0, 76.8) \
  /* NVIDIA H800 datasheet, SXM column: H100 SXM compute and HBM, NVLink cut  \
   * to 400 GB/s bidirectional (200 per direction). NIC as DGX H100. */       \
  X("h800", "NVIDIA H800 SXM5 80GB",                                          \
    67.0, 494.7, 989.4, 1978.9, 80.0, 3350.0, 132, 200.0, 400.0, 8,           \
    "NVIDIA H800 Tensor Core GPU datasheet (2023), H800 SXM column", 50.0, 76.8) \
  /* NVIDIA H200 datasheet, SXM column: H100 SXM compute, 141 GB HBM3e at     \
   * 4.8 TB/s, NVLink 900 GB/s bidirectional. NIC: 400 Gb/s NDR per GPU. */   \
  X("h200", "NVIDIA H200 SXM 141GB",                                          \
    67.0, 494.7, 989.4, 1978.9, 141.0, 4800.0, 132, 450.0, 400.0, 8,          \
    "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column", 50.0, 76.8) \
  /* NVIDIA HGX B200 / DGX B200 datasheets (2024): 8-GPU totals divided by 8, \
   * sparse tensor figures halved. 1,440 GB HBM3e total = 180 GB per GPU      \
   * (the Blackwell launch material says "up to 192 GB"), 64 TB/s = 8 TB/s;   \
   * NVLink 5: 1.8 TB/s bidirectional. NIC: DGX B200, 400 Gb/s per GPU. */    \
  X("b200", "NVIDIA B200 SXM 180GB (HGX B200)",                               \
    80.0, 1100.0, 2250.0, 4500.0, 180.0, 8000.0, 148, 900.0, 400.0, 8,        \
    "NVIDIA HGX B200 and DGX B200 datasheets (2024), per-GPU figures", 50.0, 89.6) \
  /* NVIDIA GB200 NVL72 datasheet (2024): rack totals divided by 72 GPUs,    \
   * sparse tensor figures halved (FP8 720 PF -> 5,000 dense per GPU;       \
   * FP16/BF16 360 PF -> 2,500; TF32 180 PF -> 1,250; FP32 6,480 TF -> 90);   \
   * 13.4 TB HBM3e -> 186 GB, 576 TB/s -> 8 TB/s; NVLink 5 130 TB/s -> 1.8    \
   * TB/s bidirectional (900 per direction). The NVLink domain is the whole  \
   * rack: gpus_per_node 72, so TP/EP groups inside it run at NVLink speed    \
   * (stepcast's node is the NVLink domain). NIC: 400 Gb/s per GPU           \
   * (ConnectX-7 per GPU in the reference compute tray). */                   \
  X("gb200", "NVIDIA GB200 (NVL72 rack, 72-GPU NVLink domain)",                \
    90.0, 1250.0, 2500.0, 5000.0, 186.0, 8000.0, 148, 900.0, 400.0, 72,       \
    "NVIDIA GB200 NVL72 datasheet (2024), rack figures / 72", 225.0, 255.6) \
  /* NVIDIA H20 (export part, 2024 product brief): FP32 44, TF32 74, FP16/    \
   * BF16 148, FP8 296 TFLOP/s dense; 96 GB HBM3 at 4.0 TB/s; NVLink 900 GB/s \
   * bidirectional. The brief gives no SM count: 78 is the figure reported    \
   * for the part (an estimate; it only sets GEMM tile quantisation). */     \
  X("h20", "NVIDIA H20 96GB",                                                 \
    44.0, 74.0, 148.0, 296.0, 96.0, 4000.0, 78, 450.0, 400.0, 8,              \
    "NVIDIA H20 datasheet (product brief, 2024); SM count reported, not in it", 50.0, 76.8) \
  /* AMD Instinct MI300X datasheet (2023): peak matrix FP32 163.4, TF32      \
   * 653.7, FP16/BF16 1,307.4, FP8 2,614.9 TFLOP/s dense; 192 GB HBM3 at 5.3  \
   * TB/s; 304 compute units (sms); Infinity Fabric 896 GB/s aggregate (7     \
   * links x 128 GB/s bidirectional) -> 448 per direction, priced as if       \
   * switched (the 8-GPU platform is a full xGMI mesh, which RCCL's rings     \
   * spread over). NIC: 400 Gb/s per GPU (the 8-GPU platform's NICs). No     \
   * step-time calibration: kernel-data priors. */                            \
  X("mi300x", "AMD Instinct MI300X OAM 192GB",                                \
    163.4, 653.7, 1307.4, 2614.9, 192.0, 5300.0, 304, 448.0, 400.0, 8,        \
    "AMD Instinct MI300X accelerator datasheet (2023)", 50.0, 115.2) \
  /* AMD Instinct MI325X datasheet (2024): MI300X compute, 256 GB HBM3E at    \
   * 6.0 TB/s, the same Infinity Fabric. */                                   \
  X("mi325x", "AMD Instinct MI325X OAM 256GB",                                \
    163.4, 653.7, 1307.4, 2614.9, 256.0, 6000.0, 304, 448.0, 400.0, 8,        \
    "AMD Instinct MI325X accelerator datasheet (2024)", 50.0, 115.2)

static const sc_hw presets[] = {
#define SC_X_HW(key, desc, fp32, tf32, bf16, fp8, gib, gbps, sms, nvl, nic,     \
                gpn, src, hlink, hmem)                                          \
  {key, desc, fp32, tf32, bf16, fp8, gib, gbps, sms, nvl, nic, gpn, src, hlink, hmem},
    SC_HW_LIST(SC_X_HW)
#undef SC_X_HW
};

#define PRESET_COUNT (sizeof presets / sizeof presets[0])

size_t sc_hw_count(void) { return PRESET_COUNT; }

const sc_hw *sc_hw_at(size_t i) {
  return i < PRESET_COUNT ? &presets[i] : NULL;
}

/* ASCII case-insensitive equality; preset keys are plain ASCII. */
static int name_equal_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
  }
  return *a == *b;
}

const sc_hw *sc_hw_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < PRESET_COUNT; i++) {
    if (name_equal_nocase(presets[i].name, name)) return &presets[i];
  }
  return NULL;
}

/* Device names as the CUDA runtime, nvidia-smi and nccl-tests print them
 * ("NVIDIA A100-SXM4-80GB", "A100-SXM4-40GB", "NVIDIA H100 80GB HBM3",
 * "NVIDIA H200"), matched lower-cased, first row that fits. PCIe and NVL
 * boards (other clocks, links and memory), GH200 (other memory) and the
 * A800 (other links) have no preset: NULL, so the caller asks for one rather than
 * pricing the wrong part. */
static const struct {
  const char *part, *needs, *preset; /* needs: a further substring, or NULL */
} device_map[] = {
    {"pcie", NULL, NULL},         {" nvl", NULL, NULL},           {"gh200", NULL, NULL},
    {"h100", "96g", NULL}, /* 96 GB H100s run at several power limits: name one */
    {"a100", "80g", "a100-80gb"},
    {"a100", NULL, "a100-40gb"},  {"h100", NULL, "h100-sxm"},     {"h800", NULL, "h800"},
    {"h200", NULL, "h200"},       {"h20", NULL, "h20"},           {"gb200", NULL, "gb200"},
    {"b200", NULL, "b200"},       {"v100", NULL, "v100-32gb"},    {"mi300x", NULL, "mi300x"},
    {"mi325x", NULL, "mi325x"},
};

const sc_hw *sc_hw_match(const char *device_name) {
  char s[128];
  size_t n = 0;
  for (const char *p = device_name ? device_name : ""; *p && n + 1 < sizeof s; p++)
    s[n++] = (char)tolower((unsigned char)*p);
  s[n] = 0;
  for (size_t i = 0; i < sizeof device_map / sizeof device_map[0]; i++) {
    if (!strstr(s, device_map[i].part)) continue;
    if (device_map[i].needs && !strstr(s, device_map[i].needs)) continue;
    return device_map[i].preset ? sc_hw_find(device_map[i].preset) : NULL;
  }
  return NULL;
}
