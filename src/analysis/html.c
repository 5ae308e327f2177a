/*
 * html.c: the HTML reports (stepcast/report.h): a run (timeline of one step,
 * breakdown, memory per stage, config), a sweep (step time vs memory with the
 * Pareto front, top layouts) and a validation (predicted vs measured, errors).
 * The last stage of the pipeline beside report.c; plots are inline SVG drawn
 * with svg.c. A run's timeline comes from a second simulation of its plan
 * with the engine's op sink (simulate.c), at one pixel column per 1/1000 of
 * the step.
 */
#include "stepcast/report.h"
#include "stepcast/sweep.h"
#include "stepcast/trace.h"
#include "stepcast/validate.h"

#include "analysis/replay_int.h"
#include "analysis/simulate_int.h"
#include "analysis/svg_int.h"
#include "input/config_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define GIB 1073741824.0

/* ------------------------------------------------------------ timeline */

/* Pixel columns of the timeline: one per 1/TL_COLS of the step. */
#define TL_COLS 1000
/* Pipeline stages shown: first, middle, last. */
#define TL_STAGES 3
/* Rows per rank: the compute stream, then one per communication category
 * (1 + category): the streams' ops by the category they are accounted to. */
#define TL_KINDS (SC_CAT_COUNT + 1)

typedef struct timeline {
  int64_t stage[TL_STAGES]; /* the stages shown (by_rank: the ranks) */
  int64_t rank[TL_STAGES]; /* global rank shown for the stage; -1 until seen */
  int nstages;
  int by_rank;             /* 1: rows by rank (replayed jobs), not by pipeline stage */
  double col_ns;           /* step time per column */
  double *busy;            /* [TL_STAGES][TL_KINDS][TL_COLS][SC_CAT_COUNT], ns */
  int any[TL_STAGES][TL_KINDS];
  /* The memory track of the shown ranks per column: the most held in it,
   * and what is held at its end (-1: no change in the column). */
  double mem_max[TL_STAGES][TL_COLS], mem_end[TL_STAGES][TL_COLS];
} timeline;

static size_t tl_cells(void) { return (size_t)TL_STAGES * TL_KINDS * TL_COLS * SC_CAT_COUNT; }

static double *tl_row(timeline *t, int k, int kind) {
  return t->busy + ((size_t)k * TL_KINDS + (size_t)kind) * TL_COLS * SC_CAT_COUNT;
}

/* The engine's op sink: adds the op's time to the columns it overlaps, for
 * the first rank seen of each shown stage. */
static void tl_op(void *ud, int64_t rank, int64_t stage, int stream, int cat, int64_t start_ns,
                  int64_t end_ns) {
  timeline *t = ud;
  int k = -1;
  for (int i = 0; i < t->nstages; i++)
    if (t->stage[i] == (t->by_rank ? rank : stage)) k = i;
  if (k < 0 || cat < 0 || cat >= SC_CAT_COUNT || end_ns <= start_ns) return;
  if (t->rank[k] < 0) t->rank[k] = rank;
  else if (t->rank[k] != rank) return;
  int kind = stream == SC_ST_COMPUTE ? 0 : 1 + cat;
  double *row = tl_row(t, k, kind);
  double s = (double)start_ns, e = (double)end_ns;
  int64_t c0 = (int64_t)(s / t->col_ns), c1 = (int64_t)((e - 1) / t->col_ns);
  if (c0 >= TL_COLS) c0 = TL_COLS - 1;
  if (c1 >= TL_COLS) c1 = TL_COLS - 1;
  for (int64_t c = c0; c <= c1; c++) {
    double lo = (double)c * t->col_ns, hi = lo + t->col_ns;
    if (c == TL_COLS - 1) hi = e > hi ? e : hi; /* past the end: the last column */
    double ov = (e < hi ? e : hi) - (s > lo ? s : lo);
    if (ov > 0) row[c * SC_CAT_COUNT + cat] += ov;
  }
  t->any[k][kind] = 1;
}

/* The engine's memory sink: the track of the ranks the timeline shows. */
static void tl_mem(void *ud, int64_t rank, int64_t stage, int64_t t_ns, double bytes) {
  timeline *t = ud;
  int k = -1;
  for (int i = 0; i < t->nstages; i++)
    if (t->stage[i] == stage) k = i;
  if (k < 0 || (t->rank[k] >= 0 && t->rank[k] != rank)) return;
  if (t->rank[k] < 0) t->rank[k] = rank;
  int64_t c = (int64_t)((double)t_ns / t->col_ns);
  if (c >= TL_COLS) c = TL_COLS - 1;
  if (c < 0) c = 0;
  if (bytes > t->mem_max[k][c]) t->mem_max[k][c] = bytes;
  t->mem_end[k][c] = bytes;
}

/* "TP comm" from the key "tp_comm"; other keys as they are. */
static void kind_label(int kind, char *buf, size_t n) {
  if (kind == 0) {
    snprintf(buf, n, "compute stream");
    return;
  }
  if (kind - 1 == SC_CAT_BUBBLE) { /* host ops of replayed jobs */
    snprintf(buf, n, "host / idle");
    return;
  }
  const char *key = sc_category_key(kind - 1);
  const char *us = strchr(key, '_');
  if (!us || strcmp(us, "_comm")) {
    snprintf(buf, n, "%s", key);
    return;
  }
  size_t len = (size_t)(us - key), i = 0;
  for (; i < len && i + 1 < n; i++) buf[i] = (char)(key[i] >= 'a' && key[i] <= 'z' ? key[i] - 32 : key[i]);
  snprintf(buf + i, n - i, " comm");
}

/* Time unit of an axis over [0, step_s]: seconds, or ms below a second. */
static double time_unit(double step_s, const char **name) {
  if (step_s >= 1.0) {
    *name = "s";
    return 1.0;
  }
  *name = "ms";
  return 1e3;
}

#define TL_LEFT 200.0
#define TL_RIGHT 20.0
#define TL_ROW_H 14.0
#define TL_ROW_GAP 3.0
#define TL_GROUP_H 20.0

static void timeline_svg(sc_html *h, timeline *t, double step_s, const char *what) {
  double rows_h = 0;
  for (int k = 0; k < t->nstages; k++) {
    rows_h += TL_GROUP_H;
    for (int kind = 0; kind < TL_KINDS; kind++)
      if (kind == 0 || t->any[k][kind]) rows_h += TL_ROW_H + TL_ROW_GAP;
  }
  const char *unit;
  double mul = time_unit(step_s, &unit);
  char xt[64];
  snprintf(xt, sizeof xt, "time in the %s (%s)", what, unit);
  sc_svg_plot p = {h, TL_LEFT + TL_COLS + TL_RIGHT, 10 + rows_h + 48, TL_LEFT, 10, TL_RIGHT, 48,
                   {0, step_s * mul, 0, 0, xt}, {0, 1, 0, 0, NULL}};
  sc__svg_plot_begin(&p, "timeline of one step: streams of the first, middle and last stage");
  double y = 10;
  for (int k = 0; k < t->nstages; k++) {
    if (t->by_rank)
      sc__htmlf(h, "<text x=\"4\" y=\"%.1f\" font-weight=\"bold\">rank %lld</text>\n", y + 14,
                (long long)t->stage[k]);
    else
      sc__htmlf(h, "<text x=\"4\" y=\"%.1f\" font-weight=\"bold\">stage %lld, rank %lld</text>\n",
                y + 14, (long long)t->stage[k], (long long)(t->rank[k] < 0 ? 0 : t->rank[k]));
    y += TL_GROUP_H;
    for (int kind = 0; kind < TL_KINDS; kind++) {
      if (kind && !t->any[k][kind]) continue;
      char label[48];
      kind_label(kind, label, sizeof label);
      sc__htmlf(h, "<text x=\"16\" y=\"%.1f\">%s</text>\n<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" "
                   "height=\"%.0f\" fill=\"#f1f1f1\"/>\n",
                y + 11, label, TL_LEFT, y, TL_COLS, TL_ROW_H);
      const double *row = tl_row(t, k, kind);
      int run_cat = -1, run_q = 0, run_start = 0;
      for (int c = 0; c <= TL_COLS; c++) {
        int cat = -1, q = 0;
        if (c < TL_COLS) {
          double sum = 0, best = 0;
          for (int i = 0; i < SC_CAT_COUNT; i++) {
            double b = row[c * SC_CAT_COUNT + i];
            sum += b;
            if (b > best) best = b, cat = i;
          }
          /* Busy fraction of the column in quarters, any activity at least
           * one quarter so that short collectives stay visible. */
          double f = sum / t->col_ns;
          q = f <= 0 ? 0 : f >= 1 ? 4 : (int)ceil(f * 4 - 1e-9);
          if (!q) cat = -1;
        }
        if (c < TL_COLS && cat == run_cat && q == run_q) continue;
        if (run_cat >= 0 && run_q > 0)
          sc__htmlf(h, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%d\" height=\"%.0f\" fill=\"%s\"%s/>\n",
                    TL_LEFT + run_start, y, c - run_start, TL_ROW_H,
                    sc__svg_category_colour(run_cat),
                    run_q == 4 ? "" : run_q == 3 ? " fill-opacity=\"0.75\""
                                   : run_q == 2 ? " fill-opacity=\"0.5\""
                                                : " fill-opacity=\"0.25\"");
        run_cat = cat, run_q = q, run_start = c;
      }
      y += TL_ROW_H + TL_ROW_GAP;
    }
  }
  sc__svg_plot_end(&p);
}

/* Memory over the step of the shown ranks against capacity: per column the
 * most held (columns without a change hold what the previous one ended
 * with). */
static void memory_time_svg(sc_html *h, const timeline *t, const sc_result *r, double step_s) {
  double line[TL_STAGES][TL_COLS]; /* 24 KB */
  double ymax = r->memory_capacity_gib;
  for (int k = 0; k < t->nstages; k++) {
    double cur = 0;
    for (int c = 0; c < TL_COLS; c++) {
      double v = t->mem_max[k][c] > cur ? t->mem_max[k][c] : cur;
      if (t->mem_end[k][c] >= 0) cur = t->mem_end[k][c];
      line[k][c] = v / GIB;
      if (line[k][c] > ymax) ymax = line[k][c];
    }
  }
  const char *unit;
  double mul = time_unit(step_s, &unit);
  char xt[64];
  snprintf(xt, sizeof xt, "time in the step (%s)", unit);
  sc_svg_plot p = {h, TL_LEFT + TL_COLS + TL_RIGHT, 300, TL_LEFT, 12, TL_RIGHT, 48,
                   {0, step_s * mul, 0, 0, xt}, {0, ymax * 1.08, 0, 0, "memory per GPU (GiB)"}};
  sc__svg_plot_begin(&p, "memory over the step of the first, middle and last stage");
  double yc = sc__svg_py(&p, r->memory_capacity_gib);
  sc__htmlf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b00\" "
               "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#b00\" "
               "text-anchor=\"end\">capacity %.0f GiB</text>\n",
            p.left, yc, p.width - p.right, yc, p.width - p.right - 4, yc - 4,
            r->memory_capacity_gib);
  if (r->memory_usable_gib < r->memory_capacity_gib) {
    double yu = sc__svg_py(&p, r->memory_usable_gib);
    sc__htmlf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e07000\" "
                 "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
              p.left, yu, p.width - p.right, yu);
  }
  for (int k = 0; k < t->nstages; k++) {
    double peak = 0;
    for (int c = 0; c < TL_COLS; c++) peak = line[k][c] > peak ? line[k][c] : peak;
    sc__htmlf(h, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
              sc__svg_palette(k));
    for (int c = 0; c < TL_COLS; c++)
      sc__htmlf(h, "%.1f,%.1f ", p.left + c + 0.5, sc__svg_py(&p, line[k][c]));
    sc__htmlf(h, "\"><title>stage %lld, rank %lld: peak %.2f GiB</title></polyline>\n",
              (long long)t->stage[k], (long long)(t->rank[k] < 0 ? 0 : t->rank[k]), peak);
  }
  sc__svg_plot_end(&p);
  sc__htmlf(h, "<div class=\"legend\">");
  for (int k = 0; k < t->nstages; k++)
    sc__htmlf(h, "<span><i style=\"background:%s\"></i>stage %lld</span>", sc__svg_palette(k),
              (long long)t->stage[k]);
  sc__htmlf(h, "</div>\n");
}

static void legend_categories(sc_html *h) {
  sc__htmlf(h, "<div class=\"legend\">");
  for (int c = 0; c < SC_CAT_COUNT; c++) {
    sc__htmlf(h, "<span><i style=\"background:%s\"></i>", sc__svg_category_colour(c));
    sc__html_text(h, sc_category_key(c));
    sc__htmlf(h, "</span>");
  }
  sc__htmlf(h, "<span><i style=\"background:#f1f1f1;border:1px solid #ccc\"></i>idle</span>"
               "</div>\n");
}

/* ------------------------------------------------------------ run */

static void kv_row(sc_html *h, const char *key, const char *fmt, ...) SC_PRINTF(3, 4);
static void kv_row(sc_html *h, const char *key, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sc__htmlf(h, "<tr><td>");
  sc__html_text(h, key);
  sc__htmlf(h, "</td><td>");
  sc__html_text(h, buf);
  sc__htmlf(h, "</td></tr>\n");
}

static void headline_table(sc_html *h, const sc_config *cfg, const sc_result *r) {
  sc__htmlf(h, "<table class=\"kv\">\n");
  kv_row(h, "step time", "%.3f s", r->step_time_s);
  if (r->step_time_hi_s > 0)
    kv_row(h, "90 % interval", "%.3f .. %.3f s (from the calibration rows' errors)",
           r->step_time_lo_s, r->step_time_hi_s);
  kv_row(h, "throughput", "%.0f tokens/s", r->tokens_per_s);
  kv_row(h, "TFLOP/s per GPU", "%.1f model, %.1f hardware (with recompute)", r->tflops_per_gpu,
         r->hw_tflops_per_gpu);
  kv_row(h, "MFU / HFU", "%.1f %% / %.1f %%", 100 * r->mfu, 100 * r->hfu);
  kv_row(h, "memory per GPU (estimate)", "%.2f GiB on stage %lld of %.0f GiB%s", r->memory_gib,
         (long long)r->memory_peak_stage, r->memory_capacity_gib,
         r->oom ? ": OUT OF MEMORY" : "");
  if (r->memory_usable_gib < r->memory_capacity_gib)
    kv_row(h, "usable memory", "%.2f GiB (cluster.mem_headroom %g)", r->memory_usable_gib,
           cfg->cluster.mem_headroom);
  if (r->time_to_train_days > 0) {
    kv_row(h, "time to train", "%.2f days for %.4g tokens", r->time_to_train_days,
           cfg->training.tokens);
    kv_row(h, "GPU-hours", "%.0f", r->gpu_hours);
    if (cfg->cluster.price_per_gpu_hour > 0)
      kv_row(h, "cost", "%.0f at %g per GPU-hour", r->cost, cfg->cluster.price_per_gpu_hour);
  }
  if (r->varied_ranks > 0) { /* what-if variation (docs/WHATIF.md) */
    kv_row(h, "variation", "%lld of %lld ranks varied, slowest GPU speed %.3g",
           (long long)r->varied_ranks, (long long)r->num_gpus, r->slowest_gpu_speed);
    if (r->step_time_nominal_s > 0)
      kv_row(h, "nominal step", "%.3f s without the variation (%+.1f %%)", r->step_time_nominal_s,
             100.0 * (r->step_time_s / r->step_time_nominal_s - 1.0));
    if (r->gpu_mix_ranks > 0)
      kv_row(h, "gpu mix", "%lld ranks on %s%s", (long long)r->gpu_mix_ranks, r->gpu_mix,
             r->gpu_mix_oom ? ": a stage on it is OUT OF MEMORY" : "");
  }
  if (r->run_steps > 0)
    kv_row(h, "goodput", "%.1f %% over %lld steps (%.3g failures), run %.3g days",
           100.0 * r->goodput, (long long)r->run_steps, r->failures, r->run_days);
  kv_row(h, "simulated", "%lld of %lld ranks%s, %lld ops, %lld events",
         (long long)r->simulated_ranks, (long long)r->num_gpus,
         r->varied_ranks > 0 && r->simulated_ranks < r->num_gpus ? " (the classes the variation splits)"
         : r->simulated_ranks < r->num_gpus                     ? " (folded)"
                                                                : "",
         (long long)r->ops, (long long)r->events);
  sc__htmlf(h, "</table>\n");
}

static void breakdown_svg(sc_html *h, const sc_result *r) {
  int shown[SC_CAT_COUNT], n = 0;
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (r->breakdown_s[c] > 0 || !((c == SC_CAT_CP || c == SC_CAT_EP))) shown[n++] = c;
  const char *unit;
  double mul = time_unit(r->step_time_s, &unit);
  char xt[64];
  snprintf(xt, sizeof xt, "time per step, mean over ranks (%s)", unit);
  double bar = 20, gap = 6, top = 10;
  sc_svg_plot p = {h, 620, top + n * (bar + gap) + 48, 130, top, 110, 48,
                   {0, r->step_time_s * mul > 0 ? r->step_time_s * mul : 1, 0, 0, xt},
                   {0, 1, 0, 0, NULL}};
  sc__svg_plot_begin(&p, "where the step goes");
  for (int i = 0; i < n; i++) {
    int c = shown[i];
    double y = top + i * (bar + gap), v = r->breakdown_s[c] * mul;
    double x1 = sc__svg_px(&p, v);
    sc__htmlf(h, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", p.left - 6, y + 14);
    sc__html_text(h, sc_category_label(c));
    sc__htmlf(h, "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\">%.3f %s (%.1f %%)</text>\n",
              p.left, y, x1 - p.left, bar, sc__svg_category_colour(c), x1 + 4, y + 14, v, unit,
              r->step_time_s > 0 ? 100 * r->breakdown_s[c] / r->step_time_s : 0.0);
  }
  sc__svg_plot_end(&p);
}

/* Memory per stage: collected through sc__memory_each_stage. */
typedef struct stage_list {
  sc_ctx *ctx;
  sc_memory_stage *v;
  int64_t n, cap;
} stage_list;

static int stage_add(void *ud, const sc_memory_stage *st) {
  stage_list *l = ud;
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 16;
    sc_memory_stage *v = sc__realloc(l->ctx, l->v, (size_t)l->cap * sizeof *v, (size_t)cap * sizeof *v);
    if (!v) return SC_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *st;
  return 0;
}

static void memory_svg(sc_html *h, const sc_result *r, const stage_list *l) {
  double ymax = r->memory_capacity_gib;
  for (int64_t s = 0; s < l->n; s++)
    if (l->v[s].total_bytes / GIB > ymax) ymax = l->v[s].total_bytes / GIB;
  ymax *= 1.08;
  sc_svg_plot p = {h, 620, 340, 64, 12, 130, 48,
                   {-0.5, (double)l->n - 0.5, 0, 1, "pipeline stage"},
                   {0, ymax, 0, 0, "memory per GPU (GiB)"}};
  sc__svg_plot_begin(&p, "memory per GPU by pipeline stage against capacity");
  double slot = (p.width - p.left - p.right) / (double)(l->n ? l->n : 1);
  double bw = slot * 0.7 < 1 ? 1 : slot * 0.7;
  for (int64_t s = 0; s < l->n; s++) {
    const sc_memory_stage *st = &l->v[s];
    double x = sc__svg_px(&p, (double)s) - bw / 2, base = 0;
    sc__htmlf(h, "<g><title>stage %lld: %.2f GiB", (long long)s, st->total_bytes / GIB);
#define SC_X_TIP(key, label, expr) sc__htmlf(h, ", " label " %.2f", (expr) / GIB);
    SC_MEMORY_TERMS(SC_X_TIP)
#undef SC_X_TIP
    sc__htmlf(h, "</title>");
    int i = 0;
#define SC_X_BAR(key, label, expr)                                                           \
  {                                                                                          \
    double v = (expr) / GIB;                                                                 \
    if (v > 0) {                                                                             \
      double y0 = sc__svg_py(&p, base), y1 = sc__svg_py(&p, base + v);                       \
      sc__htmlf(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\"/>", \
                x, y1, bw, y0 - y1, sc__svg_palette(i));                                     \
    }                                                                                        \
    base += v;                                                                               \
    i++;                                                                                     \
  }
    SC_MEMORY_TERMS(SC_X_BAR)
#undef SC_X_BAR
    sc__htmlf(h, "</g>\n");
  }
  double yc = sc__svg_py(&p, r->memory_capacity_gib);
  sc__htmlf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b00\" "
               "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#b00\">capacity %.0f GiB"
               "</text>\n",
            p.left, yc, p.width - p.right, yc, p.width - p.right + 4, yc + 4,
            r->memory_capacity_gib);
  if (r->memory_usable_gib < r->memory_capacity_gib) {
    double yu = sc__svg_py(&p, r->memory_usable_gib);
    sc__htmlf(h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e07000\" "
                 "stroke-width=\"2\" stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\" "
                 "fill=\"#e07000\">usable %.1f GiB</text>\n",
              p.left, yu, p.width - p.right, yu, p.width - p.right + 4, yu + 16,
              r->memory_usable_gib);
  }
  sc__svg_plot_end(&p);
  sc__htmlf(h, "<div class=\"legend\">");
  int i = 0;
#define SC_X_LEG(key, label, expr) \
  sc__htmlf(h, "<span><i style=\"background:%s\"></i>%s</span>", sc__svg_palette(i++), key);
  SC_MEMORY_TERMS(SC_X_LEG)
#undef SC_X_LEG
  sc__htmlf(h, "</div>\n");
}

/* The critical path: time per category on it and where most of it runs. */
static void critical_table(sc_html *h, const sc_result *r) {
  if (r->critical_path_ops <= 0) return;
  sc__htmlf(h, "<h2>Critical path</h2>\n<p class=\"note\">The chain of %lld ops, each started "
               "by the end of the one before, that ends the step: only shortening ops on it "
               "shortens the step.</p>\n<div class=\"cols\"><div><table><tr>"
               "<th class=\"l\">category</th><th>seconds</th><th>share</th></tr>\n",
            (long long)r->critical_path_ops);
  for (int c = 0; c < SC_CAT_COUNT; c++)
    if (r->critical_path_s[c] > 0) {
      sc__htmlf(h, "<tr><td class=\"l\"><i style=\"display:inline-block;width:10px;height:10px;"
                   "background:%s\"></i> ", sc__svg_category_colour(c));
      sc__html_text(h, sc_category_key(c));
      sc__htmlf(h, "</td><td>%.3f</td><td>%.1f %%</td></tr>\n", r->critical_path_s[c],
                r->step_time_s > 0 ? 100 * r->critical_path_s[c] / r->step_time_s : 0.0);
    }
  sc__htmlf(h, "</table></div><div><table><tr><th>stage</th><th class=\"l\">stream</th>"
               "<th>seconds on the path</th></tr>\n");
  for (int i = 0; i < SC_CPATH_TOP && r->critical_path_top[i].stream; i++) {
    sc__htmlf(h, "<tr><td>%lld</td><td class=\"l\">", (long long)r->critical_path_top[i].stage);
    sc__html_text(h, r->critical_path_top[i].stream);
    sc__htmlf(h, "</td><td>%.3f</td></tr>\n", r->critical_path_top[i].seconds);
  }
  sc__htmlf(h, "</table></div>");
  /* the ranks that set the step, where a rank is more than its stage's class */
  if (r->varied_ranks > 0 || r->simulated_ranks == r->num_gpus) {
    sc__htmlf(h, "<div><table><tr><th>rank</th><th>stands for</th><th>seconds on the path</th>"
                 "</tr>\n");
    for (int i = 0; i < SC_CPATH_TOP && r->critical_path_ranks[i].ranks; i++)
      sc__htmlf(h, "<tr><td>%lld</td><td>%lld</td><td>%.3f</td></tr>\n",
                (long long)r->critical_path_ranks[i].rank,
                (long long)r->critical_path_ranks[i].ranks, r->critical_path_ranks[i].seconds);
    sc__htmlf(h, "</table></div>");
  }
  sc__htmlf(h, "</div>\n");
}

static void config_table(sc_html *h, const sc_config *cfg) {
  int n = sc_config_field_count(), half = (n + 1) / 2;
  sc__htmlf(h, "<table><tr><th class=\"l\">field</th><th class=\"l\">value</th>"
               "<th class=\"l\">field</th><th class=\"l\">value</th></tr>\n");
  for (int i = 0; i < half; i++) {
    sc__htmlf(h, "<tr>");
    for (int j = i; j < n; j += half) {
      char v[256];
      if (sc__config_format_field(cfg, j, v, sizeof v)) snprintf(v, sizeof v, "?");
      sc__htmlf(h, "<td class=\"l\">");
      sc__html_text(h, sc_config_field_name(j));
      sc__htmlf(h, "</td><td class=\"l\">");
      sc__html_text(h, v);
      sc__htmlf(h, "</td>");
    }
    if (i + half >= n) sc__htmlf(h, "<td></td><td></td>");
    sc__htmlf(h, "</tr>\n");
  }
  sc__htmlf(h, "</table>\n");
}

int sc_report_html_run(sc_ctx *ctx, const sc_config *cfg, const sc_result *res, sc_write_fn w,
                       void *ud) {
  if (!ctx) return SC_EINVAL;
  if (!cfg || !res || !w) return sc__error(ctx, SC_EINVAL, "sc_report_html_run: no config, result or sink");
  timeline t;
  memset(&t, 0, sizeof t);
  stage_list sl = {ctx, NULL, 0, 0};
  sc_plan plan;
  int rc = sc__plan_init(ctx, cfg, &plan);
  if (rc) return rc;
  int64_t pp = plan.shape.pp;
  int64_t want[TL_STAGES] = {0, (pp - 1) / 2, pp - 1};
  /* With a variation, the stage of the rank that sets the step shows that
   * rank (in the middle row unless it is the first or last stage). */
  int64_t crank = -1, cstage = -1;
  if (res->varied_ranks > 0 && res->critical_path_ranks[0].ranks > 0) {
    int64_t stride = plan.shape.tp * plan.shape.cp * plan.shape.dp;
    crank = res->critical_path_ranks[0].rank;
    cstage = stride > 0 ? crank / stride : -1;
    if (cstage != want[0] && cstage != want[2]) want[1] = cstage;
  }
  for (int i = 0; i < TL_STAGES; i++) {
    int dup = 0;
    for (int j = 0; j < t.nstages; j++) dup |= t.stage[j] == want[i];
    if (!dup) {
      t.rank[t.nstages] = want[i] == cstage ? crank : -1;
      t.stage[t.nstages++] = want[i];
    }
  }
  double step_ns = res->step_time_s * 1e9;
  t.col_ns = step_ns / TL_COLS > 1 ? step_ns / TL_COLS : 1;
  t.busy = sc__calloc(ctx, tl_cells(), sizeof *t.busy);
  if (!t.busy) return SC_ENOMEM;
  for (int k = 0; k < TL_STAGES; k++)
    for (int c = 0; c < TL_COLS; c++) t.mem_end[k][c] = -1;
  sc_result again;
  sc_sim_hooks hooks = {tl_op, &t, tl_mem, &t, 0, NULL};
  rc = sc__plan_simulate_ex(ctx, &plan, NULL, NULL, &hooks, &again);
  if (!rc) rc = sc__memory_each_stage(ctx, cfg, stage_add, &sl);
  if (!rc) {
    sc_html h = {w, ud, 0};
    char title[256];
    snprintf(title, sizeof title, "stepcast run: %s on %lld x %s", cfg->model.name[0] ? cfg->model.name : "model",
             (long long)res->num_gpus, cfg->cluster.gpu);
    sc__html_page_begin(&h, title);
    const sc_parallel_cfg *p = &cfg->parallel;
    sc__htmlf(&h, "<p class=\"note\">TP=%lld PP=%lld DP=%lld CP=%lld vpp=%lld, %s, batch %lld x "
                  "micro-batch %lld, sequence %lld, recompute %s, %s.</p>\n",
              (long long)p->tp, (long long)p->pp, (long long)p->dp, (long long)p->cp,
              (long long)(p->vpp > 0 ? p->vpp : 1),
              sc_enum_label(SC_ENUM_SCHEDULE, p->vpp > 1 && p->schedule != SC_SCHED_ZBV &&
                                                      p->schedule != SC_SCHED_DUALPIPEV
                                                  ? SC_SCHED_INTERLEAVED
                                                  : p->schedule),
              (long long)cfg->training.global_batch, (long long)cfg->training.micro_batch,
              (long long)cfg->model.seq_len, sc_enum_name(SC_ENUM_RECOMPUTE, cfg->training.recompute),
              sc_enum_name(SC_ENUM_PRECISION, cfg->training.precision));
    headline_table(&h, cfg, res);
    sc__htmlf(&h, "<h2>Timeline of one step</h2>\n<p class=\"note\">One row per stream of the "
                  "rank simulated for the first, middle and last pipeline stage; a column is "
                  "1/%d of the step, coloured by what its stream ran most, shaded by how busy "
                  "it was (a quarter, half, three quarters, all). Communication rows show every "
                  "collective, overlapped or exposed; the compute row's gaps are the time its "
                  "rank waits (bubble, exposed communication).%s</p>\n",
              TL_COLS,
              crank >= 0 ? " With the variation, the middle row (or the first or last, if "
                           "its stage is one of those) is the rank that holds most of the "
                           "critical path."
                         : "");
    timeline_svg(&h, &t, again.step_time_s, "step");
    legend_categories(&h);
    sc__htmlf(&h, "<div class=\"cols\"><div><h2>Time breakdown</h2>\n");
    breakdown_svg(&h, res);
    if (res->breakdown_s[SC_CAT_BUBBLE] > 0)
      sc__htmlf(&h, "<p class=\"note\">Pipeline bubble: %.3f s the schedule's (the idle time of "
                    "the busiest rank), %.3f s stage imbalance (ranks waiting because another "
                    "stage has more to do).</p>\n",
                res->breakdown_s[SC_CAT_BUBBLE] - res->bubble_imbalance_s, res->bubble_imbalance_s);
    sc__htmlf(&h, "</div><div><h2>Memory per stage</h2>\n");
    memory_svg(&h, res, &sl);
    sc__htmlf(&h, "</div></div>\n<h2>Memory over the step</h2>\n<p class=\"note\">What a "
                  "GPU of the first, middle and last stage holds along the step (the memory "
                  "model's track: activations piling up through the warm-up, draining in the "
                  "cool-down; its peak is the stage's total above), per column of 1/%d of the "
                  "step; hover a line for its peak.</p>\n",
              TL_COLS);
    memory_time_svg(&h, &t, res, again.step_time_s);
    critical_table(&h, res);
    sc__htmlf(&h, "<h2>Configuration</h2>\n");
    config_table(&h, cfg);
    sc__html_page_end(&h);
    rc = h.rc;
  }
  sc__free(ctx, sl.v, (size_t)sl.cap * sizeof *sl.v);
  sc__free(ctx, t.busy, tl_cells() * sizeof *t.busy);
  return rc;
}

/* ------------------------------------------------------------ sweep */

/* Axis range over values v[0..n) with a margin; a log axis when they span
 * more than a factor of 20 (and are positive). */
static void data_axis(sc_svg_axis *a, const double *v, size_t n, double extra, int allow_log) {
  double lo = extra, hi = extra;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < lo || (lo <= 0 && v[i] > 0)) lo = v[i];
    if (v[i] > hi) hi = v[i];
  }
  a->log = allow_log && lo > 0 && hi / lo > 20;
  if (a->log) {
    a->lo = lo / 1.15;
    a->hi = hi * 1.15;
  } else {
    double pad = hi > lo ? (hi - lo) * 0.06 : (hi > 0 ? hi * 0.1 : 1);
    a->lo = lo - pad > 0 ? lo - pad : 0;
    a->hi = hi + pad;
  }
}

static int cmp_front(const void *x, const void *y) {
  const sc_sweep_row *a = *(const sc_sweep_row *const *)x, *b = *(const sc_sweep_row *const *)y;
  if (a->memory_gib != b->memory_gib) return a->memory_gib < b->memory_gib ? -1 : 1;
  if (a->step_time_s != b->step_time_s) return a->step_time_s < b->step_time_s ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static void sweep_point(sc_html *h, const sc_svg_plot *p, const sc_sweep_row *w, double r,
                        const char *fill, const char *stroke) {
  char key[160];
  sc__htmlf(h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\"><title>",
            sc__svg_px(p, w->memory_gib), sc__svg_py(p, w->step_time_s), r, fill, stroke);
  sc__html_text(h, sc_sweep_row_key(w, key, sizeof key));
  sc__htmlf(h, ": %.3f s, %.1f GiB, MFU %.1f %%</title></circle>\n", w->step_time_s,
            w->memory_gib, 100 * w->mfu);
}

int sc_report_html_sweep(sc_ctx *ctx, const sc_config *base, const sc_sweep_result *r,
                         int top_k, sc_write_fn w, void *ud) {
  if (!ctx) return SC_EINVAL;
  if (!base || !r || !w) return sc__error(ctx, SC_EINVAL, "sc_report_html_sweep: no base, result or sink");
  if (top_k <= 0) top_k = 10;
  size_t n = (size_t)(r->simulated > 0 ? r->simulated : 0);
  int64_t ntop = (int64_t)n < top_k ? (int64_t)n : top_k;
  /* The Pareto front: by memory, then step time; a row is on it when it is
   * faster than every row using less memory. */
  const sc_sweep_row **order = sc__calloc(ctx, n ? n : 1, sizeof *order);
  double *xs = sc__calloc(ctx, n ? n : 1, sizeof *xs), *ys = sc__calloc(ctx, n ? n : 1, sizeof *ys);
  int rc = order && xs && ys ? SC_OK : SC_ENOMEM;
  sc_html h = {w, ud, 0};
  if (!rc) {
    for (size_t i = 0; i < n; i++) {
      order[i] = &r->rows[i];
      xs[i] = r->rows[i].memory_gib;
      ys[i] = r->rows[i].step_time_s;
    }
    qsort(order, n, sizeof *order, cmp_front);
    char title[256];
    snprintf(title, sizeof title, "stepcast sweep: %s on %lld x %s", base->model.name,
             (long long)r->gpus, base->cluster.gpu);
    sc__html_page_begin(&h, title);
    int64_t excluded = 0;
    for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++) excluded += r->excluded[i];
    sc__htmlf(&h, "<p class=\"note\">Batch %lld, sequence %lld, %s. %lld layouts enumerated, "
                  "%lld simulated, %lld excluded (",
              (long long)base->training.global_batch, (long long)base->model.seq_len,
              sc_enum_name(SC_ENUM_PRECISION, base->training.precision),
              (long long)r->candidates, (long long)r->simulated, (long long)excluded);
    int first = 1;
    for (int i = 0; i < SC_SWEEP_REASON_COUNT; i++)
      if (r->excluded[i]) {
        sc__htmlf(&h, "%s%s %lld", first ? "" : ", ", sc_sweep_reason_key(i),
                  (long long)r->excluded[i]);
        first = 0;
      }
    sc__htmlf(&h, "%s). Memory limit %.1f GiB of %.0f GiB.</p>\n", first ? "none" : "",
              r->usable_gib > 0 ? r->usable_gib : r->capacity_gib, r->capacity_gib);
    sc__htmlf(&h, "<h2>Step time against memory</h2>\n<p class=\"note\">Every simulated layout "
                  "(grey), the top %lld by throughput (blue) and the Pareto front (red: no other "
                  "layout is both faster and smaller); hover a point for its layout.</p>\n",
              (long long)ntop);
    sc_svg_plot p = {&h, 900, 460, 80, 12, 30, 48, {0, 1, 0, 0, "peak memory per GPU (GiB)"},
                     {0, 1, 0, 0, "step time (s)"}};
    double limit = r->usable_gib > 0 ? r->usable_gib : r->capacity_gib;
    data_axis(&p.x, xs, n, limit, 0);
    data_axis(&p.y, ys, n, n ? ys[0] : 1, 1);
    sc__svg_plot_begin(&p, "step time against peak memory of the simulated layouts");
    double xl = sc__svg_px(&p, limit);
    sc__htmlf(&h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b00\" "
                  "stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#b00\" "
                  "text-anchor=\"end\">memory limit %.1f GiB</text>\n",
              xl, p.top, xl, p.height - p.bottom, xl - 4, p.top + 12, limit);
    for (size_t i = 0; i < n; i++)
      if ((int64_t)i >= ntop) sweep_point(&h, &p, &r->rows[i], 2.5, "#bbb", "none");
    for (int64_t i = ntop - 1; i >= 0; i--) sweep_point(&h, &p, &r->rows[i], 4, "#4e79a7", "#fff");
    double best = INFINITY;
    sc__htmlf(&h, "<polyline fill=\"none\" stroke=\"#e15759\" stroke-width=\"1.5\" points=\"");
    for (size_t i = 0; i < n; i++)
      if (order[i]->step_time_s < best) {
        best = order[i]->step_time_s;
        sc__htmlf(&h, "%.1f,%.1f ", sc__svg_px(&p, order[i]->memory_gib),
                  sc__svg_py(&p, order[i]->step_time_s));
      }
    sc__htmlf(&h, "\"/>\n");
    best = INFINITY;
    for (size_t i = 0; i < n; i++)
      if (order[i]->step_time_s < best) {
        best = order[i]->step_time_s;
        sweep_point(&h, &p, order[i], 3.5, "#e15759", "#fff");
      }
    sc__svg_plot_end(&p);
    int cost = base->training.tokens > 0;
    /* Breakdown columns: the categories some shown row spends time in. */
    int used[SC_CAT_COUNT] = {0};
    for (int64_t i = 0; i < ntop; i++)
      for (int c = 0; c < SC_CAT_COUNT; c++) used[c] |= r->rows[i].breakdown_s[c] > 0;
    sc__htmlf(&h, "<h2>Top %lld by throughput</h2>\n<p class=\"note\">The layout key names "
                  "tp, pp, vpp, micro-batch, sequence parallelism, recompute and distributed "
                  "optimizer (docs/SWEEP.md); the breakdown is seconds per step, communication "
                  "columns exposed time only.</p>\n<div style=\"overflow-x:auto\"><table><tr>"
                  "<th>rank</th><th class=\"l\">layout</th><th class=\"l\">schedule</th>"
                  "<th>dp</th><th>step (s)</th><th>tokens/s</th><th>TFLOP/s per GPU</th>"
                  "<th>MFU</th><th>memory (GiB)</th>",
              (long long)ntop);
    for (int c = 0; c < SC_CAT_COUNT; c++)
      if (used[c]) {
        sc__htmlf(&h, "<th>");
        sc__html_text(&h, sc_category_key(c));
        sc__htmlf(&h, " (s)</th>");
      }
    if (cost)
      sc__htmlf(&h, "<th>days to train</th>%s",
                base->cluster.price_per_gpu_hour > 0 ? "<th>cost</th>" : "");
    sc__htmlf(&h, "</tr>\n");
    for (int64_t i = 0; i < ntop; i++) {
      const sc_sweep_row *x = &r->rows[i];
      char key[160];
      sc__htmlf(&h, "<tr><td>%lld</td><td class=\"l\" style=\"white-space:nowrap\">",
                (long long)(i + 1));
      sc__html_text(&h, sc_sweep_row_key(x, key, sizeof key));
      const char *sn = sc_enum_name(SC_ENUM_SCHEDULE, (int)x->schedule);
      sc__htmlf(&h, "</td><td class=\"l\">%s</td><td>%lld</td><td>%.3f</td><td>%.0f</td>"
                    "<td>%.1f</td><td>%.1f&nbsp;%%</td><td>%.1f</td>",
                x->pp > 1 && sn ? sn : "-", (long long)x->dp, x->step_time_s, x->tokens_per_s,
                x->tflops_per_gpu, 100 * x->mfu, x->memory_gib);
      for (int c = 0; c < SC_CAT_COUNT; c++)
        if (used[c]) sc__htmlf(&h, "<td>%.3f</td>", x->breakdown_s[c]);
      if (cost && x->tokens_per_s > 0) {
        double days = base->training.tokens / x->tokens_per_s / 86400.0;
        sc__htmlf(&h, "<td>%.2f</td>", days);
        if (base->cluster.price_per_gpu_hour > 0)
          sc__htmlf(&h, "<td>%.0f</td>",
                    days * 24.0 * (double)r->gpus * base->cluster.price_per_gpu_hour);
      }
      sc__htmlf(&h, "</tr>\n");
    }
    sc__htmlf(&h, "</table></div>\n");
    sc__html_page_end(&h);
    rc = h.rc;
  }
  sc__free(ctx, order, (n ? n : 1) * sizeof *order);
  sc__free(ctx, xs, (n ? n : 1) * sizeof *xs);
  sc__free(ctx, ys, (n ? n : 1) * sizeof *ys);
  return rc;
}

/* ------------------------------------------------------------ validate */

static int file_index(const sc_caseset *set, const char *file) {
  for (size_t i = 0; i < sc_caseset_file_count(set); i++)
    if (!strcmp(sc_caseset_file(set, i), file)) return (int)i;
  return 0;
}

static void stats_row(sc_html *h, const sc_caseset *set, const sc_case_result *res,
                      const char *file, int split, const char *label) {
  sc_error_stats st;
  sc_validate_stats(set, res, file, split, &st);
  if (!st.n && !st.unsupported && !st.errors) return;
  sc__htmlf(h, "<tr><td class=\"l\">");
  sc__html_text(h, label);
  sc__htmlf(h, "</td><td class=\"l\">%s</td><td>%zu</td><td>%zu</td><td>%zu</td>",
            split < 0 ? "all" : split == SC_SPLIT_VALIDATION ? "validation" : "calibration", st.n,
            st.unsupported, st.errors);
  if (st.n)
    sc__htmlf(h, "<td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%+.1f</td></tr>\n", st.mape_pct,
              st.median_abs_pct, st.max_abs_pct, st.bias_pct);
  else
    sc__htmlf(h, "<td></td><td></td><td></td><td></td></tr>\n");
}

int sc_report_html_validate(sc_ctx *ctx, const sc_caseset *set, const sc_case_result *res,
                            sc_write_fn w, void *ud) {
  if (!ctx) return SC_EINVAL;
  if (!set || !res || !w) return sc__error(ctx, SC_EINVAL, "sc_report_html_validate: no cases, results or sink");
  size_t n = sc_caseset_count(set), nf = sc_caseset_file_count(set);
  sc_html h = {w, ud, 0};
  sc__html_page_begin(&h, "stepcast validate: predicted vs measured step time");
  double lo = INFINITY, hi = 0;
  size_t shown = 0;
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (res[i].status || res[i].predicted_step_s <= 0 || c->measured_step_s <= 0) continue;
    double v[2] = {c->measured_step_s, res[i].predicted_step_s};
    for (int k = 0; k < 2; k++) {
      if (v[k] < lo) lo = v[k];
      if (v[k] > hi) hi = v[k];
    }
    shown++;
  }
  if (!shown) lo = 0.1, hi = 10;
  lo /= 1.3;
  hi *= 1.3;
  sc__htmlf(&h, "<p class=\"note\">%zu cases in %zu files, %zu with a prediction. Filled points: "
                "validation rows; hollow: calibration rows (fitted, not evidence). The line is "
                "y = x, the band +-10 %%.</p>\n",
            n, nf, shown);
  sc_svg_plot p = {&h, 760, 560, 80, 12, 30, 48, {lo, hi, 1, 0, "measured step time (s)"},
                   {lo, hi, 1, 0, "predicted step time (s)"}};
  sc__svg_plot_begin(&p, "predicted against measured step time, log-log");
  double a = lo, b = hi;
  sc__htmlf(&h, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"#eee\"/>\n",
            sc__svg_px(&p, a), sc__svg_py(&p, a * 1.1), sc__svg_px(&p, b / 1.1),
            sc__svg_py(&p, b), sc__svg_px(&p, b), sc__svg_py(&p, b * 0.9),
            sc__svg_px(&p, a / 0.9), sc__svg_py(&p, a));
  sc__htmlf(&h, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#666\"/>\n",
            sc__svg_px(&p, a), sc__svg_py(&p, a), sc__svg_px(&p, b), sc__svg_py(&p, b));
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    if (res[i].status || res[i].predicted_step_s <= 0 || c->measured_step_s <= 0) continue;
    const char *col = sc__svg_palette(file_index(set, c->file));
    int cal = c->split == SC_SPLIT_CALIBRATION;
    sc__htmlf(&h, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"%s\" "
                  "stroke-width=\"1.5\"><title>",
              sc__svg_px(&p, c->measured_step_s), sc__svg_py(&p, res[i].predicted_step_s),
              cal ? "#fff" : col, col);
    sc__html_text(&h, c->id);
    sc__htmlf(&h, ": measured %.3g s, predicted %.3g s (%+.1f %%)</title></circle>\n",
              c->measured_step_s, res[i].predicted_step_s, res[i].error_pct);
  }
  sc__svg_plot_end(&p);
  sc__htmlf(&h, "<div class=\"legend\">");
  for (size_t f = 0; f < nf; f++) {
    sc__htmlf(&h, "<span><i style=\"background:%s\"></i>", sc__svg_palette((int)f));
    sc__html_text(&h, sc_caseset_file(set, f));
    sc__htmlf(&h, "</span>");
  }
  sc__htmlf(&h, "</div>\n<h2>Errors</h2>\n<p class=\"note\">Error = (predicted - measured) / "
                "measured, in %%: negative means the prediction is too fast.</p>\n<table><tr>"
                "<th class=\"l\">file</th><th class=\"l\">split</th><th>simulated</th>"
                "<th>unsupported</th><th>failed</th><th>MAPE (%%)</th><th>median |err| (%%)</th>"
                "<th>worst |err| (%%)</th><th>bias (%%)</th></tr>\n");
  for (size_t f = 0; f < nf; f++)
    for (int split = SC_SPLIT_VALIDATION; split <= SC_SPLIT_CALIBRATION; split++)
      stats_row(&h, set, res, sc_caseset_file(set, f), split, sc_caseset_file(set, f));
  stats_row(&h, set, res, NULL, SC_SPLIT_VALIDATION, "all files");
  sc__htmlf(&h, "</table>\n<h2>Cases</h2>\n<table><tr><th class=\"l\">case</th>"
                "<th class=\"l\">where</th><th class=\"l\">split</th><th>measured (s)</th>"
                "<th>predicted (s)</th><th>error (%%)</th><th class=\"l\">note</th></tr>\n");
  for (size_t i = 0; i < n; i++) {
    const sc_case *c = sc_caseset_case(set, i);
    sc__htmlf(&h, "<tr><td class=\"l\">");
    sc__html_text(&h, c->id);
    sc__htmlf(&h, "</td><td class=\"l\">");
    sc__html_text(&h, c->file);
    sc__htmlf(&h, ":%d</td><td class=\"l\">%s</td><td>%.4g</td>", c->line,
              c->split == SC_SPLIT_CALIBRATION ? "calibration" : "validation", c->measured_step_s);
    if (!res[i].status)
      sc__htmlf(&h, "<td>%.4g</td><td>%+.1f</td><td></td></tr>\n", res[i].predicted_step_s,
                res[i].error_pct);
    else {
      sc__htmlf(&h, "<td></td><td></td><td class=\"l\">%s: ",
                res[i].status == SC_EUNSUPPORTED ? "not modelled" : "failed");
      sc__html_text(&h, res[i].reason);
      sc__htmlf(&h, "</td></tr>\n");
    }
  }
  sc__htmlf(&h, "</table>\n");
  sc__html_page_end(&h);
  return h.rc;
}

/* ------------------------------------------------------------ replay */

int sc_report_html_replay(sc_ctx *ctx, const sc_job *job, const sc_config *cfg,
                          const sc_replay_opts *opts, const sc_replay_result *res, sc_write_fn w,
                          void *ud) {
  if (!ctx) return SC_EINVAL;
  if (!job || !cfg || !res || !w)
    return sc__error(ctx, SC_EINVAL, "sc_report_html_replay: no job, config, result or sink");
  timeline t;
  memset(&t, 0, sizeof t);
  t.by_rank = 1;
  int64_t n = res->simulated_ranks > 0 ? res->simulated_ranks : 1;
  int64_t want[TL_STAGES] = {0, (n - 1) / 2, n - 1};
  for (int i = 0; i < TL_STAGES; i++) {
    int dup = 0;
    for (int j = 0; j < t.nstages; j++) dup |= t.stage[j] == want[i];
    if (!dup) t.rank[t.nstages] = -1, t.stage[t.nstages++] = want[i];
  }
  int64_t iters = res->iterations > 0 ? res->iterations : 1;
  double span_s = res->predicted_step_s * (double)iters;
  t.col_ns = span_s * 1e9 / TL_COLS > 1 ? span_s * 1e9 / TL_COLS : 1;
  t.busy = sc__calloc(ctx, tl_cells(), sizeof *t.busy);
  if (!t.busy) return SC_ENOMEM;
  sc_replay_result again;
  int rc = sc__replay_run(ctx, job, cfg, opts, NULL, NULL, NULL, tl_op, &t, &again);
  if (!rc) {
    sc_html h = {w, ud, 0};
    char title[256];
    snprintf(title, sizeof title, "stepcast replay: %lld rank(s) on %s", (long long)res->world,
             res->gpu ? res->gpu : "?");
    sc__html_page_begin(&h, title);
    sc__htmlf(&h, "<p class=\"note\">%lld traced rank(s) of %lld, %lld iteration(s), collectives "
                  "%s%s.</p>\n<table class=\"kv\">\n",
              (long long)res->simulated_ranks, (long long)res->traced_world, (long long)iters,
              res->comm ? res->comm : "?",
              res->dp != res->traced_dp ? ", re-targeted to another data-parallel degree" : "");
    if (res->traced_step_s > 0)
      kv_row(&h, "traced step", "%.3f ms%s%s%s%s", res->traced_step_s * 1e3,
             res->dp != res->traced_dp ? " (at the traced scale)" : "", res->traced_gpu ? " (traced on " : "",
             res->traced_gpu ? res->traced_gpu : "", res->traced_gpu ? ")" : "");
    kv_row(&h, "predicted step", "%.3f ms", res->predicted_step_s * 1e3);
    if (res->traced_step_s > 0 && res->dp == res->traced_dp && !res->traced_gpu)
      kv_row(&h, "error", "%+.1f %%", res->error_pct);
    kv_row(&h, "data parallel", "%lld (traced %lld), world %lld (traced %lld)", (long long)res->dp,
           (long long)res->traced_dp, (long long)res->world, (long long)res->traced_world);
    kv_row(&h, "GPU busy per iteration", "%.3f ms (%s)", res->gpu_busy_s * 1e3,
           res->priced_ops ? "priced" : "traced");
    kv_row(&h, "collectives", "%lld priced by the comm model, %lld with traced durations",
           (long long)res->modelled_collectives, (long long)res->measured_collectives);
    if (res->ddp_buckets) kv_row(&h, "DDP", "%lld bucket all-reduce(s) per step", (long long)res->ddp_buckets);
    sc__htmlf(&h, "</table>\n<h2>Timeline of the replay</h2>\n<p class=\"note\">One row per "
                  "stream of the first, middle and last simulated rank over the %lld replayed "
                  "iteration(s); a column is 1/%d of it, coloured and shaded as in the run "
                  "report (docs/REPORT.md). Host and idle time is the \"bubble\" colour: a "
                  "replayed GPU waiting on its host is not a pipeline bubble.</p>\n",
              (long long)iters, TL_COLS);
    timeline_svg(&h, &t, span_s, "replay");
    legend_categories(&h);
    /* the breakdown, labelled as the text report labels it */
    sc__htmlf(&h, "<h2>Time per iteration</h2>\n<table><tr><th class=\"l\">category</th>"
                  "<th>ms</th><th>share</th></tr>\n");
    for (int c = 0; c < SC_CAT_COUNT; c++) {
      if (res->breakdown_s[c] <= 0) continue;
      sc__htmlf(&h, "<tr><td class=\"l\">");
      sc__html_text(&h, c == SC_CAT_BUBBLE ? "GPU idle / host" : sc_category_label(c));
      sc__htmlf(&h, "</td><td>%.3f</td><td>%.1f %%</td></tr>\n", res->breakdown_s[c] * 1e3,
                res->predicted_step_s > 0 ? 100 * res->breakdown_s[c] / res->predicted_step_s : 0.0);
    }
    sc__htmlf(&h, "</table>\n");
    sc__html_page_end(&h);
    rc = h.rc;
  }
  sc__free(ctx, t.busy, tl_cells() * sizeof *t.busy);
  return rc;
}
