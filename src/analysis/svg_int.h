/*
 * svg_int.h: the small writer behind the HTML reports (analysis/html.c):
 * sticky-error HTML output with escaping, and SVG plot frames (linear or
 * logarithmic axes with "nice" ticks, grid, axis titles with units) that map
 * data to pixels. Everything is generated here, inline: no script, no font,
 * nothing fetched, so a report works from disk. Not API.
 */
#ifndef SC_SVG_INT_H
#define SC_SVG_INT_H

#include "base/sc_int.h"

/* An output: the sink and the first error it returned (later writes are
 * skipped, SC_WRITE style). */
typedef struct sc_html {
  sc_write_fn w;
  void *ud;
  int rc;
} sc_html;

/* printf-formatted raw output (at most SC_WRITEF_MAX bytes per call). */
void sc__htmlf(sc_html *h, const char *fmt, ...) SC_PRINTF(2, 3);
/* Text with &, <, >, " and ' escaped, for element content and attributes. */
void sc__html_text(sc_html *h, const char *s);

/* The page around a report: doctype, charset, the shared style sheet, the
 * title (escaped) as <title> and <h1>; sc__html_page_end closes it. */
void sc__html_page_begin(sc_html *h, const char *title);
void sc__html_page_end(sc_html *h);

/* Colour of a breakdown category (sc_category), "#rrggbb"; categories past
 * the table cycle through it. */
const char *sc__svg_category_colour(int cat);
/* The i-th colour of the qualitative palette (files, memory terms). */
const char *sc__svg_palette(int i);

/* Ticks of an axis over [lo, hi]: for a linear axis multiples of 1, 2 or 5
 * x 10^k, about `want` of them; for a log axis the powers of ten inside
 * (with 2 and 5 between them when the range spans under two decades).
 * Writes at most max values into out and returns how many. */
int sc__svg_ticks(double lo, double hi, int log, int want, double *out, int max);

/* One axis of a plot: its data range, scale, and title with its unit
 * ("step time (s)"). */
typedef struct sc_svg_axis {
  double lo, hi;
  int log;          /* 1: logarithmic (lo > 0) */
  int integer;      /* 1: ticks only at whole numbers (stage indices) */
  const char *title;
} sc_svg_axis;

/* A plot: an <svg> of width x height px whose plot area starts at (left,
 * top) and leaves `right`/`bottom` px for ticks and titles. */
typedef struct sc_svg_plot {
  sc_html *h;
  double width, height, left, top, right, bottom;
  sc_svg_axis x, y;
} sc_svg_plot;

/* Pixel of a data value on the plot's x or y axis (clamped to the area). */
double sc__svg_px(const sc_svg_plot *p, double x);
double sc__svg_py(const sc_svg_plot *p, double y);

/* Opens the <svg> (with an accessible title), draws the grid, ticks, tick
 * labels and both axis titles; y ticks are skipped when p->y.title is NULL
 * (a timeline draws its own row labels). */
void sc__svg_plot_begin(sc_svg_plot *p, const char *title);
/* Closes the <svg>. */
void sc__svg_plot_end(sc_svg_plot *p);

/* A tick label: %g-like with at most 4 significant digits, no exponent
 * between 1e-3 and 1e6. Writes into buf and returns it. */
const char *sc__svg_num(double v, char *buf, size_t n);

#endif /* SC_SVG_INT_H */
