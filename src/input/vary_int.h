/*
 * vary_int.h: the text form of the what-if variation keys (section
 * `variation:`, docs/WHATIF.md). A key holds items separated by `;`, each a
 * list of KEY=VALUE words:
 *   slow_gpus   ranks=0,17,100-107 speed=0.8 ; count=4 speed=0.9
 *   slow_links  nodes=3,7 nic_speed=0.5 nvlink_speed=0.7 ; count=2 nic_speed=0.25
 *   gpu_mix     gpu=A100-80GB nodes=0-3   (or count=N: the last N nodes)
 *   failures    1200,3000                 (steps at which a GPU is lost)
 * In YAML a key may also be a sequence of mappings (`- {ranks: [0, 17],
 * speed: 0.8}`) or, for failures, of numbers: the loader writes it in this
 * form. The parser checks the grammar and each value's range; the ranks and
 * nodes against the job are checked where the job is known
 * (analysis/variation.c). Not API.
 */
#ifndef SC_VARY_INT_H
#define SC_VARY_INT_H

#include "base/sc_int.h"

enum { SC_VARY_GPUS, SC_VARY_LINKS, SC_VARY_MIX, SC_VARY_FAILURES };

/* Ranges one item may list. */
#define SC_VARY_MAX_RANGES 64

typedef struct sc_vary_item {
  sc_rank_range sel[SC_VARY_MAX_RANGES]; /* ranks, nodes or steps */
  size_t nsel;
  int64_t count;         /* > 0: that many chosen by variation.seed instead of sel */
  double speed;          /* slow_gpus: compute speed factor, (0, 4] */
  double nic, nvlink;    /* slow_links: link speed factors, (0, 4] */
  char gpu[32];          /* gpu_mix: the other GPU's preset name */
} sc_vary_item;

typedef int (*sc_vary_item_fn)(void *ud, const sc_vary_item *it);

/* Parses `text` of a key of `kind` and hands each item to fn (which may be
 * NULL: check only). Returns 0, fn's non-zero return, or SC_EINVAL with a
 * message naming `name` in err (n bytes). */
int sc__vary_parse(int kind, const char *name, const char *text, sc_vary_item_fn fn, void *ud,
                   char *err, size_t n);

/* 1 when the config varies the step: slow_gpus, gpu_speed_sigma,
 * slow_links or gpu_mix (failures change the run, not the step). */
int sc__vary_active(const sc_config *cfg);

/* 1 when a draw depends on variation.seed (gpu_speed_sigma, or count= in
 * slow_gpus / slow_links). */
int sc__vary_seeded(const sc_vary_cfg *v);

/* Clears what varies the step (slow_gpus, gpu_speed_sigma, slow_links,
 * gpu_mix): the nominal job of a varied config. Failures stay. */
void sc__vary_clear(sc_vary_cfg *v);

#endif /* SC_VARY_INT_H */
