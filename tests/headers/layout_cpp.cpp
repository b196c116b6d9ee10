/* SPDX-License-Identifier: MIT */
/* The public structures as C++11 lays them out: see layout_table.inc. */
#define LC_LAYOUT_TABLE lc_layout_cpp
#include "layout_table.inc"
