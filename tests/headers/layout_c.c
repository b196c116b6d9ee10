/* SPDX-License-Identifier: MIT */
/* The public structures as C11 lays them out: see layout_table.inc. */
#define LC_LAYOUT_TABLE lc_layout_c
#include "layout_table.inc"
